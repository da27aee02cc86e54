"""Prolific participants: arrivals confirmed with Prolific, the study's submissions reconciled,
bonuses paid once (docs/prolific.md)."""

#: The modules that plug Prolific into a batch's life cycle (annotation.crowd.services.hooks).
PLUG_INS = (
    "platforms.prolific.services",  # a Prolific batch's sync (platform_syncs)
    "platforms.prolific.webhooks.services.subscriptions",  # after publishing: the webhooks (published)
    "platforms.prolific.groups.services",  # participant groups (preparing, cancelled)
)
