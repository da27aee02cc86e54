"""Prolific's webhooks: the workspace's subscriptions kept as the batches need them, deliveries received.

``services.subscriptions`` creates the secret and the subscriptions when a Prolific batch is
published and removes them when no published batch needs them; ``services.deliveries``
receives a delivery (verified by the pure :mod:`platforms.prolific.signatures`) and re-reads
the batch it concerns at once; ``selectors`` says whether webhooks are seen to work (the
polling interval, and why) and what Prolific warned of; ``views`` is the endpoint Prolific
posts to. docs/prolific.md,
"Webhooks", says how to set them up.
"""

#: The platforms whose batches are Prolific studies these webhooks follow, by ``Batch.provider``: Prolific's
#: own (a study on this site) and Task Builder's (a study whose data Prolific collects, same API, same
#: workspace, same events). Read by the deliveries (which batch an event names), the subscriptions (whether
#: a published batch needs them) and the poll.
STUDY_PROVIDERS = ("prolific", "taskbuilder")
