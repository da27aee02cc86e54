"""Services of the annotation app: everything that changes its state.

Views, serializers, management commands and background jobs call these functions and
nothing else that writes. They are grouped by stage of a batch's life:

- :mod:`.batches` -- create a batch (snapshot queries and settings, group them into HITs,
  estimate the cost), cancel it, report its progress;
- :mod:`.publishing` -- render the HIT page and publish HITs, safe to re-run;
- :mod:`.answers` -- check an answer, record it once, review it (approve or reject);
- :mod:`.sync` -- fetch assignments from the provider, record and review them;
- :mod:`.local` -- in-house annotators: accounts, handing out HITs, submitting answers;
- :mod:`.prolific` -- Prolific participants: arrivals confirmed with Prolific, the study's
  submissions reconciled, bonuses, the study stopped when the batch is done;
- :mod:`.escalation` -- more assignments for HITs with disputed queries, by hand or round by
  round at sync (to a majority or a Dawid-Skene posterior), within the budget;
- :mod:`.reoffers` -- rejected MTurk places offered again; :mod:`.budget` -- what extras may spend;
- :mod:`.thresholds` -- warn and block workers below the batch's thresholds, at sync;
- :mod:`.training` -- the qualification step before a worker's first HIT of a batch;
- :mod:`.adjudication` -- a researcher settles a query's label, with a reason;
- :mod:`.quality` -- each worker's gold accuracy, agreement, Dawid-Skene accuracy and speed;
- :mod:`.prelabels` -- a machine's labels and confidences for a batch's queries, before the crowd;
- :mod:`.results` -- judgments as a frame, agreement, per-query votes, exports;
- :mod:`.background` -- publishing, syncing and escalating as background jobs (each declared
  once, :func:`core.jobs.background_job`) with a progress record.
"""

from annotation.crowd.selectors import batch_progress
from annotation.crowd.services.answers import check_answers, record_answers, review_assignment
from annotation.crowd.services.background import start_escalate, start_publish, start_sync
from annotation.crowd.services.batches import (
    BatchSettings,
    GoldQuery,
    cancel_batch,
    create_batch,
    estimate_cost,
    mturk_comparison,
    read_gold_file,
)
from annotation.crowd.services.publishing import hit_page_context, publish_batch, render_hit_html
from annotation.crowd.services.sync import SyncResult, sync_batch
from annotation.inhouse.services.handout import (
    ANNOTATORS_GROUP,
    answered_count,
    create_annotator,
    is_annotator,
    next_assignment,
    submit_local_assignment,
    validate_username,
)
from annotation.machine.services.prelabels import PrelabelSummary, make_prelabeller, prelabel_batch
from annotation.quality.selectors import worker_quality
from annotation.quality.services.adjudication import adjudicate
from annotation.quality.services.escalation import EscalationPlan, escalate_batch, plan_escalation
from annotation.results.selectors import BatchAnswers, agreement, judgments_frame, query_results
from annotation.results.services.exports import export_for_download, export_queries

__all__ = [
    "ANNOTATORS_GROUP",
    "BatchAnswers",
    "BatchSettings",
    "EscalationPlan",
    "GoldQuery",
    "PrelabelSummary",
    "SyncResult",
    "adjudicate",
    "agreement",
    "answered_count",
    "batch_progress",
    "cancel_batch",
    "check_answers",
    "create_annotator",
    "create_batch",
    "escalate_batch",
    "estimate_cost",
    "export_for_download",
    "export_queries",
    "hit_page_context",
    "is_annotator",
    "judgments_frame",
    "make_prelabeller",
    "mturk_comparison",
    "next_assignment",
    "plan_escalation",
    "prelabel_batch",
    "publish_batch",
    "query_results",
    "read_gold_file",
    "record_answers",
    "render_hit_html",
    "review_assignment",
    "start_escalate",
    "start_publish",
    "start_sync",
    "submit_local_assignment",
    "sync_batch",
    "validate_username",
    "worker_quality",
]
