// The audit page's keys, as the HIT page's: 1-4 give the query the category with that key and send it.
(function () {
  "use strict";
  var form = document.getElementById("audit-form");
  if (!form) { return; }
  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) { return; }
    var target = event.target;
    if (target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA")) { return; }
    var button = form.querySelector('button[data-key="' + event.key + '"]');
    if (!button) { return; }
    event.preventDefault();
    button.click();
  });
})();
