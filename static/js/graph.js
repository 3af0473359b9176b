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

  // A conversation's path on its graph's stored drawing (figure data-path: node ids in order):
  // its nodes and the edges between consecutive ones drawn in the highlight colour, each edge
  // labelled with its step numbers for assistive technology.
  function highlightPath(fig) {
    var path = [];
    try { path = JSON.parse(fig.getAttribute("data-path") || "[]"); } catch (e) { path = []; }
    if (!Array.isArray(path) || !path.length) return;
    var colour = fig.getAttribute("data-path-colour") || "#9467bd";
    if (!/^#[0-9a-fA-F]{6}$/.test(colour)) colour = "#9467bd";
    var onPath = {}, steps = {};
    path.forEach(function (id, k) {
      onPath[String(id)] = true;
      if (k > 0) {
        var key = String(path[k - 1]) + "->" + String(id);
        (steps[key] = steps[key] || []).push(k);
      }
    });
    fig.querySelectorAll("g.node[data-id]").forEach(function (g) {
      if (!onPath[g.getAttribute("data-id")]) return;
      g.classList.add("on-path");
      g.querySelectorAll("polygon, path, ellipse").forEach(function (s) {
        s.setAttribute("stroke", colour);
        s.setAttribute("stroke-width", "4");
      });
    });
    fig.querySelectorAll("g.edge[data-id]").forEach(function (g) {
      var k = steps[g.getAttribute("data-id")];
      if (!k) return;
      g.classList.add("on-path");
      g.querySelectorAll("path").forEach(function (s) { s.setAttribute("stroke", colour); s.setAttribute("stroke-width", "3"); });
      g.querySelectorAll("polygon").forEach(function (s) { s.setAttribute("stroke", colour); s.setAttribute("fill", colour); });
      g.setAttribute("aria-label", g.getAttribute("aria-label") + ", path step " + k.join(", "));
    });
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
    highlightPath(fig);
    // svg-pan-zoom needs a sized box: the canvas sets it, the drawing fits inside.
    svg.removeAttribute("width");
    svg.removeAttribute("height");
    svg.setAttribute("width", "100%");
    svg.setAttribute("height", "100%");
    var entry = { fig: fig, svg: svg, pz: null, flaggable: fig.hasAttribute("data-flaggable"),
      font: smallestFont(svg), layout: svg.getAttribute("data-layout") || "TB", map: null };
    entry.map = minimap(entry);  // copied before svg-pan-zoom moves the drawing into its viewport
    if (window.svgPanZoom) {
      entry.pz = window.svgPanZoom(svg, { zoomEnabled: true, controlIconsEnabled: false, fit: true, center: true,
        minZoom: 0.05, maxZoom: 30, zoomScaleSensitivity: 0.3, dblClickZoomEnabled: false,
        onPan: function () { viewChanged(entry); }, onZoom: function () { viewChanged(entry); } });
      readable(entry);
    }
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
    // Panes change size with the window: fit again.
    if (window.ResizeObserver) {
      var last = null;
      new ResizeObserver(function () {
        var size = entry.svg.clientWidth + "x" + entry.svg.clientHeight;
        if (size !== last && last !== null && entry.pz && !entry.fig.classList.contains("fullsize")) readable(entry);
        last = size;
      }).observe(fig.querySelector(".graph-canvas"));
    }
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
    else if (what === "fit") readable(entry);
    entry.fig.setAttribute("data-zoom", pz.getZoom().toFixed(3));
  }

  // Labels readable at "Fit": the whole drawing when its smallest label is then at least
  // MIN_FONT_PX on screen; otherwise that zoom, with the graph's first node in view (top centre
  // of a top-to-bottom drawing, left middle of a left-to-right one) and the minimap to move about.
  var MIN_FONT_PX = 10;

  function smallestFont(svg) {
    var least = Infinity;
    svg.querySelectorAll("text[font-size]").forEach(function (t) {
      var v = parseFloat(t.getAttribute("font-size"));
      if (v > 0 && v < least) least = v;
    });
    return least === Infinity ? 10 : least;
  }

  function viewport(entry) { return entry.svg.querySelector(".svg-pan-zoom_viewport"); }

  // svg-pan-zoom applies a change on the next animation frame: positions come from its state
  // (zoom: screen pixels per drawing unit; pan: where the drawing's origin is), never from the
  // DOM's current matrix.
  function realZoom(entry) { return entry.pz.getSizes().realZoom; }

  function drawingBox(entry, el) {  // el's bounding box in drawing units
    var vp = viewport(entry);
    var m = vp.getCTM().inverse().multiply(el.getCTM());
    var b = el.getBBox(), pts = [[b.x, b.y], [b.x + b.width, b.y + b.height]].map(function (c) {
      return { x: m.a * c[0] + m.c * c[1] + m.e, y: m.b * c[0] + m.d * c[1] + m.f };
    });
    return { x: pts[0].x, y: pts[0].y, width: pts[1].x - pts[0].x, height: pts[1].y - pts[0].y };
  }

  function readable(entry) {
    var pz = entry.pz;
    pz.resize(); pz.fit(); pz.center();
    var px = realZoom(entry) * entry.font;
    entry.fig.classList.toggle("clamped", px < MIN_FONT_PX - 0.01);
    if (px < MIN_FONT_PX - 0.01) {
      pz.zoom(pz.getZoom() * MIN_FONT_PX / px);
      var first = entry.svg.querySelector("g.node");
      if (first) {
        var z = realZoom(entry), b = drawingBox(entry, first);
        var w = entry.svg.clientWidth, h = entry.svg.clientHeight;
        if (entry.layout === "LR") pz.pan({ x: 12 - z * b.x, y: h / 2 - z * (b.y + b.height / 2) });
        else pz.pan({ x: w / 2 - z * (b.x + b.width / 2), y: 12 - z * b.y });
      }
    }
    viewChanged(entry);
  }

  // Bring an element of the drawing into view (a turn was picked whose node is off screen).
  function reveal(entry, el) {
    if (!entry || !entry.pz || !el) return;
    var z = realZoom(entry), pan = entry.pz.getPan(), b = drawingBox(entry, el);
    var w = entry.svg.clientWidth, h = entry.svg.clientHeight;
    var x0 = z * b.x + pan.x, y0 = z * b.y + pan.y, x1 = x0 + z * b.width, y1 = y0 + z * b.height;
    if (x0 >= 0 && y0 >= 0 && x1 <= w && y1 <= h) return;
    entry.pz.pan({ x: w / 2 - z * (b.x + b.width / 2), y: h / 2 - z * (b.y + b.height / 2) });
  }

  // The minimap: a small copy of the drawing with the visible part outlined; click or drag on it
  // to move the view there.
  function minimap(entry) {
    var canvas = entry.fig.querySelector(".graph-canvas");
    var vb = entry.svg.getAttribute("viewBox");
    if (!canvas || !vb) return null;
    var copy = entry.svg.cloneNode(true);
    copy.removeAttribute("data-nodes");
    copy.querySelectorAll("[id]").forEach(function (el) { el.removeAttribute("id"); });
    copy.querySelectorAll("[data-id], [tabindex], [role]").forEach(function (el) {
      ["data-id", "data-source", "data-target", "tabindex", "role", "aria-label"].forEach(function (a) { el.removeAttribute(a); });
    });
    copy.querySelectorAll("title, text").forEach(function (el) { el.parentNode.removeChild(el); });
    copy.querySelectorAll("g.node, g.edge").forEach(function (el) { el.setAttribute("class", "mm-" + el.getAttribute("class")); });
    copy.setAttribute("preserveAspectRatio", "xMidYMid meet");
    copy.setAttribute("aria-hidden", "true");
    var NS = "http://www.w3.org/2000/svg";
    var view = document.createElementNS(NS, "rect");
    view.setAttribute("class", "minimap-view");
    copy.appendChild(view);
    var box = document.createElement("div");
    box.className = "minimap";
    box.title = "Minimap: click or drag to move the view";
    box.appendChild(copy);
    canvas.appendChild(box);
    function goTo(ev) {
      var m = copy.getScreenCTM();
      if (!m || !entry.pz) return;
      var p = copy.createSVGPoint();
      p.x = ev.clientX; p.y = ev.clientY;
      p = p.matrixTransform(m.inverse());
      var z = realZoom(entry);
      entry.pz.pan({ x: entry.svg.clientWidth / 2 - z * p.x, y: entry.svg.clientHeight / 2 - z * p.y });
    }
    var dragging = false;
    box.addEventListener("mousedown", function (ev) { ev.preventDefault(); dragging = true; goTo(ev); });
    document.addEventListener("mousemove", function (ev) { if (dragging) goTo(ev); });
    document.addEventListener("mouseup", function () { dragging = false; });
    return { box: box, copy: copy, view: view };
  }

  function viewChanged(entry) {
    if (!entry.pz) return;
    var z = realZoom(entry), pan = entry.pz.getPan();
    entry.fig.setAttribute("data-font-px", (z * entry.font).toFixed(2));
    entry.fig.setAttribute("data-zoom", entry.pz.getZoom().toFixed(3));
    if (!entry.map) return;
    var v = entry.map.view, w = entry.svg.clientWidth, h = entry.svg.clientHeight;
    v.setAttribute("x", -pan.x / z); v.setAttribute("y", -pan.y / z);
    v.setAttribute("width", w / z); v.setAttribute("height", h / z);
    // Shown only while part of the drawing is out of view.
    var vb = entry.map.copy.viewBox.baseVal, x = -pan.x / z, y = -pan.y / z, eps = 1;
    var whole = vb && x <= vb.x + eps && y <= vb.y + eps && x + w / z >= vb.x + vb.width - eps && y + h / z >= vb.y + vb.height - eps;
    entry.map.box.hidden = !!whole;
  }

  function primary() {
    for (var i = 0; i < figures.length; i++) if (figures[i].flaggable) return figures[i];
    return figures[0] || null;
  }

  function clear() {
    document.querySelectorAll(".hl, .hl-sel").forEach(function (el) { el.classList.remove("hl", "hl-sel", "hl-turn"); });
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
    var firstTurn = null;
    if (target.kind === "turn") {
      var li = document.querySelector('li.turn[data-turn="' + esc(target.target) + '"]');
      if (li) {
        li.classList.add("hl", "hl-sel");
        var node = li.getAttribute("data-node");
        if (node) {
          nodeIds = [node];
          // The edge the conversation took into this turn's node: from the last earlier turn
          // on another node.
          var prev = li.previousElementSibling;
          while (prev && (!prev.getAttribute("data-node") || prev.getAttribute("data-node") === node)) {
            prev = prev.previousElementSibling;
          }
          var into = prev && root.querySelector('g.edge[data-id="' + esc(prev.getAttribute("data-node") + "->" + node) + '"]');
          if (into) into.classList.add("hl", "hl-turn");
          var n0 = root.querySelector('g.node[data-id="' + esc(node) + '"]');
          if (n0) reveal(entry, n0);
        }
        li.scrollIntoView({ block: "nearest" });
      }
    }
    nodeIds.forEach(function (id, i) {
      var n = root.querySelector('g.node[data-id="' + esc(id) + '"]');
      if (n) n.classList.add("hl");
      if (n && target.kind !== "edge") n.classList.add("hl-sel");
      if (target.kind === "node") {
        root.querySelectorAll('g.edge[data-source="' + esc(id) + '"], g.edge[data-target="' + esc(id) + '"]')
          .forEach(function (e2) { e2.classList.add("hl"); });
      }
      if (target.kind !== "turn") {
        document.querySelectorAll('li.turn[data-node="' + esc(id) + '"]').forEach(function (li2) {
          // An edge lights the turns of the node it leads to.
          if (target.kind === "edge" && i === 0) return;
          li2.classList.add("hl");
          if (!firstTurn) firstTurn = li2;
        });
      }
    });
    // And back: the conversation scrolls to the first turn the picked node or edge lights.
    if (firstTurn) firstTurn.scrollIntoView({ block: "nearest" });
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
  // A drawing the worker made after the page loaded (static/js/drawing_poll.js): set its figure up.
  document.addEventListener("drawing:ready", function (ev) {
    var fig = ev.target.closest && ev.target.closest("figure.graph");
    if (fig && !figures.some(function (f) { return f.fig === fig; })) setup(fig);
  });
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
