// The correction page (issue #31 item 5): rows of nodes and edges, or turns, edited in the browser.
// Every change is sent (debounced) to the check endpoint, which runs the generation validators;
// the findings are listed beside the form and on the rows they name. Text is set with textContent
// and .value only, never as markup.
(function () {
  "use strict";
  var form = document.getElementById("correct-form");
  if (!form) return;
  var stage = form.dataset.stage;
  var isGraph = stage !== "conversation";
  var content = JSON.parse(document.getElementById("correct-content").textContent);
  var nodeTypes = JSON.parse(document.getElementById("correct-node-types").textContent);
  var roles = JSON.parse(document.getElementById("correct-roles").textContent);
  var csrf = form.querySelector('input[name="csrfmiddlewaretoken"]').value;

  function el(tag, attrs) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") e.textContent = attrs[k]; else if (k === "value") e.value = attrs[k]; else e.setAttribute(k, attrs[k]);
    });
    return e;
  }
  function select(name, options, value) {
    var s = el("select", {"data-field": name, "aria-label": name});
    var list = options.slice();
    if (value && list.indexOf(value) < 0) list.push(value);  // keep an unknown value visible (the validator names it)
    list.forEach(function (o) { var opt = el("option", {value: o, text: o}); if (o === value) opt.selected = true; s.appendChild(opt); });
    return s;
  }
  function cell(child) { var td = el("td"); td.appendChild(child); return td; }
  function removeButton(tr) {
    var b = el("button", {type: "button", "class": "button remove-row", text: "Remove"});
    b.addEventListener("click", function () { tr.remove(); renumber(); changed(); });
    return b;
  }
  function input(name, value, extra) {
    var i = el("input", Object.assign({type: "text", "data-field": name, "aria-label": name}, extra || {}));
    i.defaultValue = value || "";  // the attribute too: rows can be found by their initial id
    return i;
  }
  function addNode(n) {
    var tr = el("tr", {"class": "node-row"});
    var type = select("type", nodeTypes, n.type || "message");
    var label = input("label", n.label);
    var syncList = function () { if (type.value === "api") label.setAttribute("list", "api-names"); else label.removeAttribute("list"); };
    type.addEventListener("change", syncList); syncList();
    tr.appendChild(cell(input("id", n.id))); tr.appendChild(cell(type)); tr.appendChild(cell(label)); tr.appendChild(cell(removeButton(tr)));
    if (n.noise) tr.dataset.noise = n.noise;
    document.querySelector("#node-rows tbody").appendChild(tr);
    return tr;
  }
  function addEdge(e) {
    var tr = el("tr", {"class": "edge-row"});
    ["id", "source", "target", "label"].forEach(function (f) { tr.appendChild(cell(input(f, e[f]))); });
    tr.appendChild(cell(removeButton(tr)));
    document.querySelector("#edge-rows tbody").appendChild(tr);
    return tr;
  }
  function addTurn(t) {
    var tr = el("tr", {"class": "turn-row"});
    var content = el("textarea", {"data-field": "content", "aria-label": "content", rows: "2"});
    content.value = t.content || "";
    tr.appendChild(el("td", {"class": "turn-no"})); tr.appendChild(cell(select("role", roles, t.role || "user")));
    tr.appendChild(cell(content)); tr.appendChild(cell(removeButton(tr)));
    document.querySelector("#turn-rows tbody").appendChild(tr);
    return tr;
  }
  function renumber() {
    document.querySelectorAll("#turn-rows .turn-row").forEach(function (tr, i) { tr.querySelector(".turn-no").textContent = String(i); });
  }
  function field(tr, name) { var f = tr.querySelector('[data-field="' + name + '"]'); return f ? f.value : ""; }
  function nextId(selector, prefix) {
    var max = -1;
    document.querySelectorAll(selector).forEach(function (i) { var m = /^[NE](\d+)$/.exec(i.value); if (m) max = Math.max(max, +m[1]); });
    return prefix + (max + 1);
  }
  function collect() {
    if (!isGraph) {
      return {messages: Array.prototype.map.call(document.querySelectorAll("#turn-rows .turn-row"), function (tr) {
        return {role: field(tr, "role"), content: field(tr, "content")};
      })};
    }
    return {
      kind: content.kind,
      nodes: Array.prototype.map.call(document.querySelectorAll("#node-rows .node-row"), function (tr) {
        var n = {id: field(tr, "id"), type: field(tr, "type"), label: field(tr, "label")};
        if (tr.dataset.noise) n.noise = tr.dataset.noise;
        return n;
      }),
      edges: Array.prototype.map.call(document.querySelectorAll("#edge-rows .edge-row"), function (tr) {
        return {id: field(tr, "id"), source: field(tr, "source"), target: field(tr, "target"), label: field(tr, "label")};
      })
    };
  }

  // ----- findings on the rows they name: "N3", "E4(N2, N4)", "edge(N2, N4)", "message 5"
  function rowsFor(where) {
    var m = /^message (\d+)$/.exec(where);
    if (m) { var t = document.querySelectorAll("#turn-rows .turn-row")[+m[1]]; return t ? [t] : []; }
    m = /^(.*)\((.*), (.*)\)$/.exec(where);
    if (m) {
      return Array.prototype.filter.call(document.querySelectorAll("#edge-rows .edge-row"), function (tr) {
        return (m[1] && m[1] !== "edge" && field(tr, "id") === m[1]) || (field(tr, "source") === m[2] && field(tr, "target") === m[3]);
      });
    }
    return Array.prototype.filter.call(document.querySelectorAll("#node-rows .node-row"), function (tr) { return field(tr, "id") === where; });
  }
  var list = document.getElementById("findings"), state = document.getElementById("check-state");
  var kindEl = document.getElementById("change-kind");
  function show(data) {
    document.querySelectorAll(".row-finding").forEach(function (n) { n.remove(); });
    document.querySelectorAll("tr.has-finding").forEach(function (n) { n.classList.remove("has-finding"); });
    list.textContent = "";
    if (data.error) { list.appendChild(el("li", {"class": "finding error", text: data.error})); return; }
    if (!data.findings.length) list.appendChild(el("li", {"class": "ok", text: "No findings."}));
    data.findings.forEach(function (f) {
      var li = el("li", {"class": "finding " + f.severity});
      li.appendChild(el("code", {text: f.rule})); li.appendChild(document.createTextNode(" " + f.where + ": " + f.message));
      list.appendChild(li);
      rowsFor(f.where).forEach(function (tr) {
        tr.classList.add("has-finding");
        tr.lastElementChild.previousElementSibling.appendChild(el("span", {"class": "row-finding", text: f.rule + ": " + f.message}));
      });
    });
    kindEl.textContent = data.change === "structure" ? "Structural change: the descendants will be marked for regeneration."
      : data.change === "text" ? "Text-only change: the descendants will be marked for review." : "";
    if (!isGraph && data.change) kindEl.textContent = data.change === "structure" ? "Turns added, removed or re-ordered." : "Text-only change.";
  }
  var timer = null, seq = 0;
  function check() {
    var mine = ++seq;
    state.textContent = "checking…";
    fetch(form.dataset.checkUrl, {method: "POST", credentials: "same-origin",
      headers: {"Content-Type": "application/json", "X-CSRFToken": csrf}, body: JSON.stringify(collect())})
      .then(function (r) { return r.json(); })
      .then(function (data) { if (mine !== seq) return; show(data); state.textContent = ""; form.dataset.checked = String(mine); })
      .catch(function () { if (mine === seq) state.textContent = "could not check"; });
  }
  function changed() { clearTimeout(timer); timer = setTimeout(check, 350); }
  form.addEventListener("input", changed);
  form.addEventListener("change", changed);

  if (isGraph) {
    content.nodes.forEach(addNode); content.edges.forEach(addEdge);
    document.getElementById("add-node").addEventListener("click", function () {
      addNode({id: nextId('#node-rows [data-field="id"]', "N"), type: "message", label: ""}).querySelector('[data-field="label"]').focus(); changed();
    });
    document.getElementById("add-edge").addEventListener("click", function () {
      addEdge({id: nextId('#edge-rows [data-field="id"]', "E")}).querySelector('[data-field="source"]').focus(); changed();
    });
  } else {
    content.messages.forEach(addTurn); renumber();
    document.getElementById("add-turn").addEventListener("click", function () {
      addTurn({role: "user", content: ""}).querySelector("textarea").focus(); renumber(); changed();
    });
  }
  form.addEventListener("submit", function () { document.getElementById("content-json").value = JSON.stringify(collect()); });
  check();  // put the current findings on their rows
  document.documentElement.dataset.correctReady = "1";
})();
