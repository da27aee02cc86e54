"""Prolific's Task Builder: Prolific hosts the labelling task (a dataset of the batch's queries, a
Task Builder batch with the four-category question, a study that hands each participant one HIT's
queries), so a lab runs a paid study with no public site of its own. The provider is
:mod:`.provider`, its client :mod:`.client`. Answers are read HIT by HIT at sync, as MTurk's. Its study
is a Prolific study, so Prolific's webhooks follow it (``STUDY_PROVIDERS`` of
``platforms.prolific.webhooks``, whose subscriptions are reconciled when a Task Builder batch
is published): it plugs in no hook of its own.
"""
