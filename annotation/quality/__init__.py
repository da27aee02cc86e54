"""The quality loop: escalation of disputed queries, re-offers, the budget of extras, worker
thresholds, training, a researcher's adjudication and each worker's quality.

Reads: :mod:`.selectors` (each worker's quality). Writes: :mod:`.services` (with the escalation job,
:mod:`.services.background`, and the loop every sync ends with, :mod:`.services.loop`). Shells:
:mod:`.views` (the review queue: rulings from the keyboard).
"""
