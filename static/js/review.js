// Keyboard shortcuts for the review page: a accept, r reject, 1-9 and 0 toggle reasons, s skip,
// u undo, ? help. Keys are ignored while typing in a text field.
(function () {
  "use strict";
  var form = document.getElementById("review-form");
  var help = document.getElementById("help");
  var hint = document.getElementById("reject-hint");

  function typing(el) {
    if (!el) return false;
    var tag = el.tagName;
    return el.isContentEditable || tag === "TEXTAREA" || tag === "SELECT" ||
      (tag === "INPUT" && !/^(checkbox|radio|button|submit)$/i.test(el.type));
  }
  function submitWith(formEl, buttonId) {
    var button = document.getElementById(buttonId);
    if (!formEl || !button) return;
    if (formEl.requestSubmit) formEl.requestSubmit(button); else button.click();
  }
  function reasons() {
    return form ? Array.prototype.slice.call(form.querySelectorAll('input[name="reason_codes"]')) : [];
  }
  function keyed(key) {
    return form ? form.querySelector('input[name="reason_codes"][data-key="' + key + '"]') : null;
  }
  function flagCount() { return window.AlmitaFlags ? window.AlmitaFlags.count() : 0; }
  function toggleHelp() {
    if (!help) return;
    if (help.open) help.close(); else help.showModal();
  }

  if (form) {
    // Rejecting by mouse without a reason: say what is missing instead of a server round trip.
    form.addEventListener("submit", function (ev) {
      var submitter = ev.submitter;
      if (submitter && submitter.value === "reject" && !flagCount() &&
          !reasons().some(function (c) { return c.checked; })) {
        ev.preventDefault();
        if (hint) hint.hidden = false;
        var first = reasons()[0];
        if (first) first.focus();
      }
    });
  }

  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (typing(ev.target)) {
      if (ev.key === "Escape") ev.target.blur();
      return;
    }
    var key = ev.key;
    if (key === "?") { ev.preventDefault(); toggleHelp(); return; }
    if (help && help.open) return;
    if (key === "a" && form) { ev.preventDefault(); submitWith(form, "btn-accept"); }
    else if (key === "r" && form) { ev.preventDefault(); submitWith(form, "btn-reject"); }
    else if (key === "s") { ev.preventDefault(); submitWith(document.getElementById("skip-form"), "btn-skip"); }
    else if (key === "u") { ev.preventDefault(); submitWith(document.getElementById("undo-form"), "btn-undo"); }
    else if (/^[0-9]$/.test(key) && form) {
      var box = keyed(key);
      if (box) { ev.preventDefault(); box.checked = !box.checked; if (hint && box.checked) hint.hidden = true; }
    }
  });
  // The shortcuts are live from here on (browser tests wait for this before pressing keys).
  document.documentElement.setAttribute("data-review-keys", "ready");
})();
