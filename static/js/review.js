// The review queue's keys: 1-4 choose a label (as on the HIT page) and move to the reason;
// Enter in the reason rules; Esc leaves the field; n goes to the next query, s skips this one.
(function () {
  "use strict";
  var TEXT = ["text", "search", "email", "number", "password", "url"];

  function typing(el) {
    return el && (el.tagName === "TEXTAREA" || el.tagName === "SELECT" || el.isContentEditable ||
      (el.tagName === "INPUT" && TEXT.indexOf(el.type) >= 0));
  }

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) { return; }
    if (typing(event.target)) {
      if (event.key === "Escape") { event.target.blur(); }
      return;
    }
    var form = document.getElementById("review-form");
    var choice = ["1", "2", "3", "4"].indexOf(event.key);
    if (choice >= 0 && form && !form.hidden) {
      var radios = form.querySelectorAll("input[name=label]");
      if (!radios[choice]) { return; }
      event.preventDefault();
      radios[choice].checked = true;
      document.getElementById("review-reason").focus();
      return;
    }
    var link = document.getElementById({ n: "review-next", s: "review-skip" }[event.key] || "");
    if (link) {
      event.preventDefault();
      link.click();
    }
  });

  // A refused ruling (400) carries the form with its errors: show it rather than nothing.
  document.addEventListener("htmx:beforeSwap", function (event) {
    if (event.detail.xhr.status === 400 && event.detail.target.id === "review-panel") {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });

  document.addEventListener("htmx:afterSettle", function () {
    var target = document.querySelector("#review-panel [data-autofocus]");
    if (target) { target.focus(); }
  });
})();
