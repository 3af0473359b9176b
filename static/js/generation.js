// Live progress: re-fetch the server-rendered fragment of every [data-poll-url] element while
// its content says work is still active; stop once everything is finished (generation jobs and
// evaluation runs).
(function () {
  "use strict";
  var INTERVAL = 2000;
  function active(el) {
    var state = el.querySelector(".poll-state");
    return state && state.getAttribute("data-active") === "1";
  }
  // A "job queued" flash is stale once the work is over.
  function dropStaleFlash(el) {
    if (active(el)) return;
    document.querySelectorAll(".messages li.job-queued").forEach(function (li) { li.remove(); });
  }
  function poll(el) {
    dropStaleFlash(el);
    if (!active(el)) return;
    window.setTimeout(function () {
      fetch(el.getAttribute("data-poll-url"), { credentials: "same-origin", headers: { "X-Requested-With": "fetch" } })
        .then(function (r) { if (!r.ok) throw new Error(r.status); return r.text(); })
        .then(function (html) {
          el.innerHTML = html;
          // data-reload-when-done: the rest of the page (e.g. a final report) is rendered once the
          // work is over, so load it whole when the fragment says it has finished.
          if (!active(el) && el.hasAttribute("data-reload-when-done")) { window.location.reload(); return; }
          poll(el);
        })
        .catch(function () { window.setTimeout(function () { poll(el); }, INTERVAL * 3); });
    }, INTERVAL);
  }
  document.querySelectorAll("[data-poll-url]").forEach(poll);
})();

// The launch form's cost estimate: re-rendered by the server for the form's current values.
(function () {
  "use strict";
  var box = document.getElementById("job-estimate");
  if (!box) return;
  var form = box.closest("form");
  var timer = null;
  function refresh() {
    var params = new URLSearchParams();
    new FormData(form).forEach(function (value, name) {
      if (typeof value === "string" && value && name !== "csrfmiddlewaretoken" && name !== "seed_intents") params.append(name, value);
    });
    var seeds = form.querySelector("[name=seed_intents]");
    if (seeds && seeds.value.trim()) {
      params.set("seed_lines", seeds.value.split("\n").filter(function (l) { return l.trim(); }).length);
    }
    fetch(box.getAttribute("data-estimate-url") + "?" + params.toString(), { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.text(); })
      .then(function (html) { box.innerHTML = html; })
      .catch(function () {});
  }
  form.addEventListener("input", function () { window.clearTimeout(timer); timer = window.setTimeout(refresh, 300); });
  form.addEventListener("change", function () { window.clearTimeout(timer); timer = window.setTimeout(refresh, 100); });
})();
