"""Prolific's webhooks (docs/prolific.md, "Webhooks"): ``services.subscriptions`` keeps the workspace's
subscriptions as the batches need them, ``services.deliveries`` receives deliveries and re-reads the batch
they concern, ``selectors`` says whether webhooks are seen to work, ``views`` is the endpoint.
"""

#: The platforms whose batches are Prolific studies these webhooks follow (``Batch.provider``): Prolific's
#: own and Task Builder's (same API, same workspace, same events).
STUDY_PROVIDERS = ("prolific", "taskbuilder")
