"""Pages of the annotation app: thin shells over services, one module per audience.

- :mod:`.researcher` -- batches: create, follow, publish, sync, cancel, escalate, agreement, export;
- :mod:`.annotator` -- in-house annotators: the next HIT, training, the HIT page;
- :mod:`.prolific` -- Prolific participants: arrival, training, the HIT page;
- :mod:`.review` -- researchers: the review queue of disputed queries.
"""

from .annotator import assignment_page, next_hit, training_page
from .prolific import prolific_hit, prolific_start, prolific_training
from .researcher import (
    batch_agreement,
    batch_cancel,
    batch_create,
    batch_detail,
    batch_escalate,
    batch_estimate,
    batch_export,
    batch_list,
    batch_list_live,
    batch_live,
    batch_publish,
    batch_query,
    batch_sync,
    export_download,
    hit_preview,
)
from .review import batch_review

__all__ = [
    "assignment_page",
    "batch_agreement",
    "batch_cancel",
    "batch_create",
    "batch_detail",
    "batch_escalate",
    "batch_estimate",
    "batch_export",
    "batch_list",
    "batch_list_live",
    "batch_live",
    "batch_publish",
    "batch_query",
    "batch_review",
    "batch_sync",
    "export_download",
    "hit_preview",
    "next_hit",
    "prolific_hit",
    "prolific_start",
    "prolific_training",
    "training_page",
]
