// Flags while reviewing: select a node, edge or turn (graph.js), press f or use the panel, pick a
// reason, optionally comment, add. The list is posted with the verdict as JSON in #flags-json.
// On the adjudication page, #flag-marks colours what each annotator flagged on one drawing.
// Text from users is only ever set with textContent.
(function () {
  "use strict";
  var G = window.AlmitaGraph;
  if (!G) return;
  var esc = function (s) { return window.CSS && CSS.escape ? CSS.escape(s) : s; };

  function elementsFor(kind, target) {
    if (kind === "turn") return document.querySelectorAll('li.turn[data-turn="' + esc(target) + '"]');
    var fig = document.querySelector("figure.graph[data-flaggable]");
    return fig ? fig.querySelectorAll("g." + kind + '[data-id="' + esc(target) + '"]') : [];
  }

  // ----- adjudication: both annotators' flags on one drawing
  var marksEl = document.getElementById("flag-marks");
  if (marksEl) {
    var marks = JSON.parse(marksEl.textContent || "{}");
    var applyMarks = function () {
      Object.keys(marks).forEach(function (kind) {
        Object.keys(marks[kind]).forEach(function (target) {
          elementsFor(kind, target).forEach(function (el) { el.classList.add("flag-" + marks[kind][target]); });
        });
      });
    };
    applyMarks();
    // A drawing the worker made after the page loaded (drawing_poll.js) gets the marks too.
    document.addEventListener("drawing:ready", applyMarks);
    document.querySelectorAll("tr[data-flag-kind]").forEach(function (tr) {
      tr.addEventListener("click", function () {
        G.select({ kind: tr.getAttribute("data-flag-kind"), target: tr.getAttribute("data-flag-target") });
      });
    });
  }

  // ----- review: adding flags
  var panel = document.getElementById("flag-panel");
  var store = document.getElementById("flags-json");
  if (!panel || !store) return;
  var formBox = document.getElementById("flag-form");
  var reason = document.getElementById("flag-reason");
  var comment = document.getElementById("flag-comment");
  var list = document.getElementById("flag-list");
  var selText = document.getElementById("flag-selected");
  var flags = [];

  function label(t) {
    return t.kind === "turn" ? "turn " + (parseInt(t.target, 10) + 1) : t.kind + " " + t.target;
  }
  function flaggable(t) { return t && elementsFor(t.kind, t.target).length > 0; }

  function render() {
    store.value = JSON.stringify(flags);
    document.querySelectorAll(".flagged").forEach(function (el) { el.classList.remove("flagged"); });
    while (list.firstChild) list.removeChild(list.firstChild);
    flags.forEach(function (f, i) {
      elementsFor(f.kind, f.target).forEach(function (el) { el.classList.add("flagged"); });
      var li = document.createElement("li");
      li.className = "flag-item";
      var code = document.createElement("code");
      code.textContent = f.reason;
      li.appendChild(code);
      li.appendChild(document.createTextNode(" on " + label(f) + (f.comment ? ": " + f.comment : "")));
      var rm = document.createElement("button");
      rm.type = "button";
      rm.className = "flag-remove";
      rm.textContent = "remove";
      rm.addEventListener("click", function () { flags.splice(i, 1); render(); });
      li.appendChild(document.createTextNode(" "));
      li.appendChild(rm);
      list.appendChild(li);
    });
    var hint = document.getElementById("reject-hint");
    if (hint && flags.length) hint.hidden = true;
  }

  G.onSelect(function (t) {
    if (!flaggable(t)) {
      selText.textContent = t ? label(t) + " (not flaggable here)" : "Nothing selected.";
      formBox.hidden = true;
      return;
    }
    selText.textContent = "Selected: " + label(t);
    formBox.hidden = false;
  });

  function add() {
    var t = G.selected();
    if (!flaggable(t)) return;
    var f = { kind: t.kind, target: t.target, reason: reason.value, comment: comment.value.trim() };
    if (f.reason === "OTHER" && !f.comment) { comment.focus(); comment.placeholder = "OTHER needs a comment"; return; }
    var dup = flags.some(function (x) { return x.kind === f.kind && x.target === f.target && x.reason === f.reason; });
    if (!dup) flags.push(f);
    comment.value = "";
    render();
    if (document.activeElement) document.activeElement.blur();
  }
  // The dropdown names the code; the line under it says what the code means (a long option text
  // would not fit the verdict column).
  var reasonText = document.getElementById("flag-reason-text");
  reason.addEventListener("change", function () {
    var opt = reason.options[reason.selectedIndex];
    if (reasonText && opt) reasonText.textContent = opt.getAttribute("data-text") || "";
  });
  document.getElementById("flag-add").addEventListener("click", add);
  document.addEventListener("drawing:ready", render);  // a late drawing shows the flags already added
  comment.addEventListener("keydown", function (ev) { if (ev.key === "Enter") { ev.preventDefault(); add(); } });
  reason.addEventListener("keydown", function (ev) { if (ev.key === "Enter") { ev.preventDefault(); add(); } });

  document.addEventListener("keydown", function (ev) {
    if (ev.key !== "f" || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    var tag = ev.target && ev.target.tagName;
    if (tag === "TEXTAREA" || tag === "SELECT" || (tag === "INPUT" && ev.target.type === "text")) return;
    if (!flaggable(G.selected())) return;
    ev.preventDefault();
    formBox.hidden = false;
    reason.focus();
  });

  window.AlmitaFlags = { count: function () { return flags.length; } };
})();
