// The queue page's one shortcut: u withdraws the last verdict (the flash after a verdict says
// "Press u to undo", and a verdict with no next item lands here).
(function () {
  "use strict";
  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || ev.key !== "u") return;
    var t = ev.target;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
    var form = document.getElementById("undo-form");
    if (!form) return;
    ev.preventDefault();
    form.requestSubmit ? form.requestSubmit() : form.submit();
  });
  document.documentElement.setAttribute("data-queue-keys", "ready");
})();
