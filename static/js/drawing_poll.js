// Drawings the worker makes for a page (generation.drawing_cache): each [data-poll] box asks its
// JSON URL until the SVG is ready, then shows it. The SVG is parsed as XML (never as HTML) and
// scripts, foreign objects and event or javascript: attributes are dropped before it is inserted;
// messages are set with textContent.
(function () {
  "use strict";
  var MAX_TRIES = 80;

  function say(box, text, cls) {
    var p = document.createElement("p");
    p.className = cls || "notice";
    p.textContent = text;
    box.replaceChildren(p);
  }

  function clean(svg) {
    svg.querySelectorAll("script, foreignObject").forEach(function (e) { e.remove(); });
    [svg].concat(Array.prototype.slice.call(svg.querySelectorAll("*"))).forEach(function (el) {
      Array.prototype.slice.call(el.attributes).forEach(function (a) {
        if (/^on/i.test(a.name) || (/href$/i.test(a.name) && /^\s*javascript:/i.test(a.value))) {
          el.removeAttribute(a.name);
        }
      });
    });
    return svg;
  }

  function show(box, data) {
    box.classList.remove("drawing-pending");
    if (!data.svg) { say(box, data.error || "The graph could not be drawn.", "error"); return; }
    var doc = new DOMParser().parseFromString(data.svg, "image/svg+xml");
    var svg = doc.documentElement;
    if (!svg || svg.localName !== "svg" || doc.getElementsByTagName("parsererror").length) {
      say(box, "The drawing could not be read.", "error");
      return;
    }
    box.replaceChildren(document.importNode(clean(svg), true));
    box.dispatchEvent(new CustomEvent("drawing:ready", { bubbles: true }));
  }

  function poll(box, delay, tries) {
    fetch(box.getAttribute("data-poll"), { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : Promise.reject(r.status); })
      .then(function (data) {
        if (data.ready) { show(box, data); return; }
        if (tries >= MAX_TRIES) { say(box, "Still drawing: reload the page in a while."); return; }
        setTimeout(function () { poll(box, Math.min(delay * 1.5, 4000), tries + 1); }, delay);
      })
      .catch(function () {
        if (tries >= MAX_TRIES) { say(box, "The drawing could not be fetched.", "error"); return; }
        setTimeout(function () { poll(box, Math.min(delay * 2, 8000), tries + 1); }, delay);
      });
  }

  // Each box polls once, however many pages' parts included this script; a part inserted later
  // (the explorer's side panel) is started with AlmitaDrawings.start(itsRoot).
  function start(root) {
    (root || document).querySelectorAll("[data-poll]").forEach(function (box) {
      if (box.hasAttribute("data-polling")) return;
      box.setAttribute("data-polling", "1");
      poll(box, 400, 0);
    });
  }

  window.AlmitaDrawings = { start: start };
  start(document);
})();
