// Graph figures: zoom, pan, fit and full size (svg-pan-zoom), and linked selection between the
// drawing and the conversation turns. Graphviz names drawn node i "n<i>" (its <title>); the
// svg's data-nodes lists the real node ids in that order. Text is only ever set with
// textContent, never as markup.
(function () {
  "use strict";
  var figures = [];
  var listeners = [];
  var selected = null;

  function titleOf(g) {
    var t = g.querySelector("title");
    return t ? t.textContent : "";
  }

  function setup(fig) {
    var svg = fig.querySelector(".graph-canvas svg");
    if (!svg) return;
    var names = [];
    try { names = JSON.parse(svg.getAttribute("data-nodes") || "[]"); } catch (e) { names = []; }
    var byName = {};
    fig.querySelectorAll("g.node").forEach(function (g) {
      var m = /^n(\d+)$/.exec(titleOf(g));
      if (!m || names[+m[1]] === undefined) return;
      var id = names[+m[1]];
      byName[titleOf(g)] = id;
      g.setAttribute("data-id", id);
      g.setAttribute("tabindex", "0");
      g.setAttribute("role", "button");
      g.setAttribute("aria-label", "node " + id);
    });
    fig.querySelectorAll("g.edge").forEach(function (g) {
      var parts = titleOf(g).split("->");
      if (parts.length !== 2 || !(parts[0] in byName) || !(parts[1] in byName)) return;
      var s = byName[parts[0]], t = byName[parts[1]];
      g.setAttribute("data-source", s);
      g.setAttribute("data-target", t);
      g.setAttribute("data-id", s + "->" + t);
      g.setAttribute("tabindex", "-1");
      g.setAttribute("role", "button");
      g.setAttribute("aria-label", "edge " + s + " to " + t);
    });
    // svg-pan-zoom needs a sized box: the canvas sets it, the drawing fits inside.
    svg.removeAttribute("width");
    svg.removeAttribute("height");
    svg.setAttribute("width", "100%");
    svg.setAttribute("height", "100%");
    var pz = null;
    if (window.svgPanZoom) {
      pz = window.svgPanZoom(svg, { zoomEnabled: true, controlIconsEnabled: false, fit: true, center: true,
        minZoom: 0.2, maxZoom: 30, zoomScaleSensitivity: 0.3, dblClickZoomEnabled: false });
    }
    var entry = { fig: fig, svg: svg, pz: pz, flaggable: fig.hasAttribute("data-flaggable") };
    figures.push(entry);
    fig.querySelectorAll(".graph-tools button").forEach(function (b) {
      b.addEventListener("click", function () { act(entry, b.getAttribute("data-act")); });
    });
    fig.addEventListener("click", function (ev) {
      var g = ev.target.closest("g.node[data-id], g.edge[data-id]");
      if (!g) return;
      select({ kind: g.classList.contains("node") ? "node" : "edge", target: g.getAttribute("data-id") }, entry);
    });
    fig.addEventListener("keydown", function (ev) {
      var g = ev.target.closest && ev.target.closest("g.node[data-id], g.edge[data-id]");
      if (g && (ev.key === "Enter" || ev.key === " ")) {
        ev.preventDefault();
        select({ kind: g.classList.contains("node") ? "node" : "edge", target: g.getAttribute("data-id") }, entry);
      }
    });
    // A secondary graph inside a closed <details> has no size until opened.
    var det = fig.closest("details");
    if (det) det.addEventListener("toggle", function () { if (det.open) act(entry, "fit"); });
  }

  function act(entry, what) {
    var pz = entry.pz;
    if (what === "full") {
      entry.fig.classList.toggle("fullsize");
      document.body.classList.toggle("has-fullsize", entry.fig.classList.contains("fullsize"));
      what = "fit";
    }
    if (!pz) return;
    if (what === "in") pz.zoomIn();
    else if (what === "out") pz.zoomOut();
    else if (what === "fit") { pz.resize(); pz.fit(); pz.center(); }
    entry.fig.setAttribute("data-zoom", pz.getZoom().toFixed(3));
  }

  function primary() {
    for (var i = 0; i < figures.length; i++) if (figures[i].flaggable) return figures[i];
    return figures[0] || null;
  }

  function clear() {
    document.querySelectorAll(".hl, .hl-sel").forEach(function (el) { el.classList.remove("hl", "hl-sel"); });
  }

  function esc(s) { return window.CSS && CSS.escape ? CSS.escape(s) : s.replace(/["\\]/g, "\\$&"); }

  // Highlight a node with its edges and turns, an edge with its ends, or a turn with its node.
  function select(target, entry) {
    clear();
    selected = target;
    if (!target) { listeners.forEach(function (cb) { cb(null); }); return; }
    entry = entry || primary();
    var root = entry ? entry.fig : document;
    var nodeIds = [];
    if (target.kind === "node") nodeIds = [target.target];
    if (target.kind === "edge") {
      var e = root.querySelector('g.edge[data-id="' + esc(target.target) + '"]');
      if (e) { e.classList.add("hl", "hl-sel"); nodeIds = [e.getAttribute("data-source"), e.getAttribute("data-target")]; }
    }
    if (target.kind === "turn") {
      var li = document.querySelector('li.turn[data-turn="' + esc(target.target) + '"]');
      if (li) {
        li.classList.add("hl", "hl-sel");
        if (li.getAttribute("data-node")) nodeIds = [li.getAttribute("data-node")];
        li.scrollIntoView({ block: "nearest" });
      }
    }
    nodeIds.forEach(function (id, i) {
      var n = root.querySelector('g.node[data-id="' + esc(id) + '"]');
      if (n) n.classList.add("hl");
      if (n && target.kind === "node") n.classList.add("hl-sel");
      if (target.kind !== "edge") {
        root.querySelectorAll('g.edge[data-source="' + esc(id) + '"], g.edge[data-target="' + esc(id) + '"]')
          .forEach(function (e2) { e2.classList.add("hl"); });
      }
      if (target.kind !== "turn") {
        document.querySelectorAll('li.turn[data-node="' + esc(id) + '"]').forEach(function (li2) {
          // An edge lights the turns of the node it leads to.
          if (target.kind === "edge" && i === 0) return;
          li2.classList.add("hl");
        });
      }
    });
    listeners.forEach(function (cb) { cb(target); });
  }

  function cycle(kind, step) {
    var items;
    var entry = primary();
    if (kind === "turn") items = Array.prototype.slice.call(document.querySelectorAll("li.turn[data-turn]"));
    else if (!entry) return;
    else items = Array.prototype.slice.call(entry.fig.querySelectorAll("g." + kind + "[data-id]"));
    if (!items.length) return;
    var attr = kind === "turn" ? "data-turn" : "data-id";
    var at = -1;
    if (selected && selected.kind === kind) {
      items.forEach(function (el, i) { if (el.getAttribute(attr) === selected.target) at = i; });
    }
    var next = items[(at + step + items.length) % items.length];
    select({ kind: kind, target: next.getAttribute(attr) }, entry);
    if (next.focus) next.focus({ preventScroll: kind !== "turn" });
  }

  function typing(el) {
    if (!el) return false;
    var tag = el.tagName;
    return el.isContentEditable || tag === "TEXTAREA" || tag === "SELECT" ||
      (tag === "INPUT" && !/^(checkbox|radio|button|submit)$/i.test(el.type));
  }

  document.querySelectorAll("figure.graph").forEach(setup);
  document.querySelectorAll("li.turn[data-turn]").forEach(function (li) {
    function pick() { select({ kind: "turn", target: li.getAttribute("data-turn") }); }
    li.addEventListener("click", pick);
    li.addEventListener("keydown", function (ev) { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); pick(); } });
  });

  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || typing(ev.target)) return;
    var help = document.getElementById("help");
    if (help && help.open) return;
    var entry = primary();
    var key = ev.key;
    if (key === "]" || key === "[") { ev.preventDefault(); cycle("node", key === "]" ? 1 : -1); }
    else if (key === "e") { ev.preventDefault(); cycle("edge", 1); }
    else if (key === "t") { ev.preventDefault(); cycle("turn", 1); }
    else if (entry && (key === "+" || key === "-" || key === "=" || key === "g")) {
      ev.preventDefault();
      act(entry, { "+": "in", "-": "out", "=": "fit", g: "full" }[key]);
    } else if (key === "Escape") {
      var full = document.querySelector("figure.graph.fullsize");
      if (full) { figures.forEach(function (f) { if (f.fig === full) act(f, "full"); }); }
      else select(null);
    }
  });

  window.AlmitaGraph = {
    onSelect: function (cb) { listeners.push(cb); },
    select: select,
    selected: function () { return selected; },
    figures: figures,
  };
})();
