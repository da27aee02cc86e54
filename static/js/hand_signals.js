/* What a worker's hands leave on the HIT page, per query, posted with the answers as
   pastes-<n>, leaves-<n> and ms-<n> (annotation.crowd.services.answers.HAND_SIGNALS):
   - pastes: paste events in the page while query n is the one shown;
   - leaves: times the tab or window was left (visibilitychange to hidden, or blur) while it was shown;
   - ms: milliseconds from query n being shown (the first query at load, each next one when the one
     before it was answered or when it took the focus) to its last answer.
   The query shown is the one holding the focus, else the first unanswered one. A field is posted only
   when it was measured: the server reads an absent one as unknown, never as zero. Inlined into the
   page (hit.html is self-contained: MTurk shows it from its own servers); loads nothing. */
(function () {
  "use strict";
  var form = document.getElementById("hit-form");
  if (!form || !window.performance) { return; }
  var sets = Array.prototype.slice.call(form.querySelectorAll("fieldset.query"));
  if (!sets.length) { return; }
  var items = sets.map(function () { return { pastes: 0, leaves: 0, shown: null, ms: null }; });
  var away = false;

  function now() { return Math.round(window.performance.now()); }
  function answered(set) { return set.querySelector("input:checked") !== null; }
  function shownIndex() {
    for (var i = 0; i < sets.length; i++) {
      if (sets[i].contains(document.activeElement)) { return i; }
    }
    for (var j = 0; j < sets.length; j++) {
      if (!answered(sets[j])) { return j; }
    }
    return sets.length - 1;
  }
  function show(index) {
    if (index >= 0 && index < items.length && items[index].shown === null) { items[index].shown = now(); }
  }
  function leave() {
    if (away) { return; }
    away = true;
    items[shownIndex()].leaves += 1;
  }
  function back() { away = false; }

  show(shownIndex());
  document.addEventListener("paste", function () { items[shownIndex()].pastes += 1; }, true);
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "hidden") { leave(); } else { back(); }
  });
  window.addEventListener("blur", leave);
  window.addEventListener("focus", back);
  form.addEventListener("focusin", function (event) {
    for (var i = 0; i < sets.length; i++) {
      if (sets[i].contains(event.target)) { show(i); }
    }
  });
  form.addEventListener("change", function (event) {
    var index = sets.indexOf(event.target.closest("fieldset.query"));
    if (index < 0) { return; }
    show(index);
    items[index].ms = now() - items[index].shown;
    show(index + 1);
  });

  function field(name, value) {
    var input = form.querySelector("input[type=hidden][name='" + name + "']");
    if (!input) {
      input = document.createElement("input");
      input.type = "hidden";
      input.name = name;
      form.appendChild(input);
    }
    input.value = String(value);
  }
  form.addEventListener("submit", function () {
    sets.forEach(function (set, i) {
      var radio = set.querySelector("input[type=radio]");
      var position = radio ? radio.name.replace(/^q-/, "") : null;
      if (!position) { return; }
      field("pastes-" + position, items[i].pastes);
      field("leaves-" + position, items[i].leaves);
      if (items[i].ms !== null) { field("ms-" + position, items[i].ms); }
    });
  });
})();
