"""The annotation app: gender labels for queries, from a crowd, in-house annotators and machines.

One app (one label, one set of migrations), in sub-domains, each a package with its own pure
modules, ``selectors`` (reads), ``services`` (writes) and shells:

- :mod:`.crowd` -- a batch's life cycle: settings, costs, HITs, publishing, syncing, answers,
  statuses, and the providers (in-house, MTurk, Prolific) with their clients;
- :mod:`.inhouse` -- in-house annotators: the hand-out of HITs, the team, simulated annotators;
- :mod:`.prolific` -- Prolific participants: arrivals, reconciling submissions, bonuses;
- :mod:`.quality` -- escalation, re-offers, budget, thresholds, training, adjudication, worker quality;
- :mod:`.results` -- aggregation, agreement, the review queue, export formats and exports;
- :mod:`.machine` -- pre-labellers, calibration, routing, category shares, the alternative-annotator test.

App-wide: :mod:`.labels` (the one vocabulary), :mod:`.models` (a package, re-exported),
:mod:`.accounts` (the login backend), ``urls``/``api_urls``, ``admin``, the commands. Other
apps use the facades :mod:`.services` and :mod:`.selectors` (see their docstrings).
"""
