from annotation.crowd.providers import app_config


class MTurkConfig(app_config.PlatformConfig):
    """Amazon Mechanical Turk and any server speaking its API (``Batch.provider`` ``mturk``)."""

    name = "platforms.mturk"
    label = "mturk"
    platform = "mturk"
