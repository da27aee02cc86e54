"""The researcher's batch pages and their API, which compose every sub-domain.

Above the sub-domains they read and start (crowd, results, quality, machine, inhouse, prolific,
publication), so that none of those imports another upwards (``tests/test_architecture.py``, the
sub-domain order). Shells: :mod:`.views` (the batch list, creation with its live estimate, the
batch page and its live part, publish, sync, cancel, escalate, agreement, a query's votes and
ruling, export, HIT preview, a Prolific batch's bonus panel), :mod:`.api`
(``/api/annotation/batches/`` and its actions, HITs, assignments, judgments, exports, bonuses).
URLs and templates are the app's (``annotation:batch-*``, ``annotation/batch_*.html``),
unchanged by where the views live. What a batch is and where it stands, the one reading these
pages show, is :func:`annotation.results.selectors.state.batch_state`.
"""
