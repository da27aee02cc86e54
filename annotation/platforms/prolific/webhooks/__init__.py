"""Prolific's webhooks: the workspace's subscriptions kept as the batches need them, deliveries received.

``services.subscriptions`` creates the secret and the subscriptions when a Prolific batch is
published and removes them when no published batch needs them; ``services.deliveries``
receives a delivery (verified by the pure :mod:`annotation.platforms.prolific.signatures`) and re-reads
the batch it concerns at once; ``selectors`` says whether webhooks are seen to work (the
polling interval, and why) and what Prolific warned of; ``views`` is the endpoint Prolific
posts to. docs/prolific.md,
"Webhooks", says how to set them up.
"""
