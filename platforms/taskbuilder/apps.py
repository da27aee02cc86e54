from annotation.crowd.providers import app_config


class TaskBuilderConfig(app_config.PlatformConfig):
    """Prolific's Task Builder (``Batch.provider`` ``taskbuilder``)."""

    name = "platforms.taskbuilder"
    label = "taskbuilder"
    platform = "taskbuilder"
