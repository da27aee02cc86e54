"""The quality loop: escalation, re-offers, the budget of extras, worker thresholds, training,
adjudication and each worker's quality. Reads: :mod:`.selectors`; writes: :mod:`.services`; shells:
:mod:`.views` (the review queue)."""
