"""The annotation app's public writes, for other apps: explicit re-exports, nothing defined here (the
facades' rule: :mod:`annotation.selectors`). :mod:`core.jobs.registry` imports this package to find
the app's background jobs, so every module declaring one is imported here."""

from annotation.crowd.services import background  # noqa: F401
from annotation.crowd.services.batch_settings import BatchSettings
from annotation.crowd.services.batches import create_batch, estimate_cost, read_labelled_file
from annotation.crowd.services.locking import reading_answers  # noqa: F401  (metrics records its reads as uses)
from annotation.crowd.services.publishing import publish_batch, render_hit_html
from annotation.crowd.services.sync import sync_batch
from annotation.machine.services import background as machine_jobs  # noqa: F401  (pre-labelling)
from annotation.machine.services.calibration import create_calibration_sample, follow_reference
from annotation.machine.services.prelabels import prelabel_batch
from annotation.machine.services.routing import audit_routing, plan_routing, route_batch
from annotation.quality.services import escalation as quality_jobs  # noqa: F401  (escalating)

__all__ = [
    "BatchSettings", "audit_routing", "create_batch", "create_calibration_sample", "estimate_cost", "follow_reference",
    "plan_routing", "prelabel_batch", "publish_batch", "read_labelled_file", "render_hit_html", "route_batch",
    "sync_batch",
]  # fmt: skip
