// The explorer (issue #31): a column picker remembered per user in localStorage, j/k to move
// between rows, Enter (or "view") to show the row's item in the side panel, Esc to close it,
// x to tick a row, and bulk actions on the ticked rows or the whole filter with a confirmation.
(function () {
  var me = document.getElementById("explore-js");
  var key = "almita.explore.columns." + me.getAttribute("data-user") + "." + me.getAttribute("data-stage");
  var table = document.getElementById("explore-table");
  var panel = document.getElementById("explore-panel");
  var picker = document.getElementById("column-picker");
  var style = document.createElement("style");
  document.head.appendChild(style);

  // ---- columns
  function chosen() {
    try { var saved = JSON.parse(localStorage.getItem(key) || "null"); if (Array.isArray(saved)) return saved; } catch (e) {}
    return Array.prototype.map.call(picker.querySelectorAll("input[data-default]"), function (b) { return b.getAttribute("data-col"); });
  }
  function applyColumns(cols) {
    var hidden = [];
    picker.querySelectorAll("input[data-col]").forEach(function (b) {
      var col = b.getAttribute("data-col");
      b.checked = cols.indexOf(col) >= 0;
      if (!b.checked) hidden.push('#explore-table [data-col="' + col + '"]');
    });
    style.textContent = hidden.length ? hidden.join(",") + "{display:none}" : "";
  }
  if (picker) {
    applyColumns(chosen());
    picker.addEventListener("change", function () {
      var cols = Array.prototype.filter.call(picker.querySelectorAll("input[data-col]"), function (b) { return b.checked; })
        .map(function (b) { return b.getAttribute("data-col"); });
      try { localStorage.setItem(key, JSON.stringify(cols)); } catch (e) {}
      applyColumns(cols);
    });
  }
  if (!table) return;

  // ---- rows, keyboard and the side panel
  var rows = Array.prototype.slice.call(table.querySelectorAll("tbody tr"));
  var current = -1;
  function select(i) {
    if (!rows.length) return;
    current = Math.max(0, Math.min(rows.length - 1, i));
    rows.forEach(function (r, j) { r.classList.toggle("current", j === current); });
    rows[current].scrollIntoView({block: "nearest"});
  }
  function openPanel(i) {
    select(i);
    var row = rows[current];
    panel.hidden = false;
    panel.innerHTML = '<p class="muted">Loading…</p>';
    document.getElementById("explore-layout").classList.add("with-panel");
    var url = table.getAttribute("data-panel-url").replace("/0/", "/" + row.getAttribute("data-item") + "/");
    fetch(url, {credentials: "same-origin", headers: {"X-Requested-With": "fetch"}})
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        if (rows[current] !== row) return;
        panel.innerHTML = html;  // scripts in it do not run: a drawing still being made is polled for here
        if (window.AlmitaDrawings) window.AlmitaDrawings.start(panel);
      })
      .catch(function (status) { panel.innerHTML = '<p class="error">This item could not be shown (' + String(status).replace(/[^0-9a-zA-Z ]/g, "") + ").</p>"; });
  }
  function closePanel() {
    panel.hidden = true;
    panel.innerHTML = "";
    document.getElementById("explore-layout").classList.remove("with-panel");
  }
  panel.addEventListener("click", function (ev) { if (ev.target.closest("#panel-close")) closePanel(); });
  rows.forEach(function (r, i) {
    r.addEventListener("click", function (ev) {
      if (ev.target.closest("input,a,button:not(.open-panel),select,label")) return;
      openPanel(i);
    });
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.target.closest && ev.target.closest("input,textarea,select,[contenteditable]")) {
      if (ev.key === "Escape") ev.target.blur();
      return;
    }
    if (ev.key === "j") { select(current + 1); ev.preventDefault(); }
    else if (ev.key === "k") { select(current < 0 ? 0 : current - 1); ev.preventDefault(); }
    else if (ev.key === "Enter" && current >= 0) { openPanel(current); ev.preventDefault(); }
    else if (ev.key === "Escape" && !panel.hidden) { closePanel(); ev.preventDefault(); }
    else if (ev.key === "x" && current >= 0) {
      var box = rows[current].querySelector('input[name="items"]');
      if (box) { box.checked = !box.checked; ticked(); }
    }
  });

  // ---- ticking and bulk actions
  var all = document.getElementById("tick-all");
  var boxes = table.querySelectorAll('input[name="items"]');
  var scope = document.getElementById("bulk-scope");
  function ticked() {
    var n = Array.prototype.filter.call(boxes, function (b) { return b.checked; }).length;
    var label = document.getElementById("bulk-ticked");
    if (label) label.textContent = n + " ticked";
    if (scope) scope.options[0].textContent = "the ticked items (" + n + ")";
    return n;
  }
  if (all) all.addEventListener("change", function () { boxes.forEach(function (b) { b.checked = all.checked; }); ticked(); });
  boxes.forEach(function (b) { b.addEventListener("change", ticked); });
  var form = document.getElementById("bulk-form");
  form.addEventListener("submit", function (ev) {
    var button = ev.submitter;
    if (!button || button.name !== "action" || !scope) return;
    var onFilter = scope.value === "filter";
    var total = document.getElementById("result-count").getAttribute("data-total");
    var n = onFilter ? Number(total) : ticked();
    if (!onFilter && !n) { ev.preventDefault(); alert("Tick at least one item, or choose the whole filter."); return; }
    document.getElementById("bulk-confirm-count").value = onFilter ? total : "";
    // The ticked items are counted beside the buttons; a whole filter asks first, with its count
    // (and the server checks the count still holds).
    if (onFilter && !confirm(button.textContent.trim() + ": all " + n + " item" + (n === 1 ? "" : "s") + " of this filter. Go ahead?")) ev.preventDefault();
  });
})();
