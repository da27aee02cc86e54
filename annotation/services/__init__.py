"""The annotation app's public writes, for other apps: explicit re-exports, nothing defined here.

The rule for both facades, :mod:`annotation.services` (writes) and :mod:`annotation.selectors`
(reads): they are the app's public surface for OTHER apps (``metrics``, ``benchmarks``; and
the job discovery of :mod:`core.jobs.registry`, which imports each app's ``services``).
Inside ``annotation``, code imports the sub-domain module that defines a name
(``annotation.crowd.services.batches``, ``annotation.results.selectors`` ...), never a facade.
A facade holds exactly the names other apps use: a name another app needs is added here.

Every write of the app lives in a sub-domain's ``services`` package, one module per topic:

- :mod:`annotation.crowd.services` -- batches (create, cancel) and their settings, publishing,
  answers (check, record, review), sync with the provider, HIT statuses, locking,
  pseudonyms, MTurk administration, and the background jobs (:mod:`.background`:
  publishing, syncing, paying bonuses, each declared once with
  :func:`core.jobs.background_job` and a progress record);
- :mod:`annotation.platforms.inhouse.services` -- in-house annotators: accounts, handing out HITs,
  submitting answers, the team and its access, simulated annotators;
- :mod:`annotation.platforms.prolific.services` -- Prolific participants: arrivals, the study's
  submissions reconciled, bonuses, the study stopped when the batch is done;
- :mod:`annotation.quality.services` -- escalation of disputed queries (and its job,
  :mod:`.background`), re-offers, the budget of extras, worker thresholds, training, a
  researcher's adjudication, the quality loop at every sync;
- :mod:`annotation.exports.services` -- exports of the labelled query sets with their
  dataset cards, the Hugging Face-ready dataset folder;
- :mod:`annotation.machine.services` -- pre-labels (and their job, :mod:`.background`), the
  blind calibration sample, routing.

The reads are in each sub-domain's ``selectors`` module (see :mod:`annotation.selectors`).
"""

# Imported for its job declarations: core.jobs.registry finds every background job of the
# app by importing this package.
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
from annotation.platforms.inhouse.services.handout import create_annotator
from annotation.platforms.prolific.bonuses import services as prolific_bonus_jobs  # noqa: F401  (paying bonuses)
from annotation.platforms.prolific.rehearsal import services as prolific_rehearsals  # noqa: F401  (rehearsing)
from annotation.platforms.prolific.webhooks.services import deliveries  # noqa: F401  (the Prolific re-read job)
from annotation.quality.services import background as quality_jobs  # noqa: F401  (escalating)

__all__ = [
    "BatchSettings",
    "audit_routing",
    "create_annotator",
    "create_batch",
    "create_calibration_sample",
    "estimate_cost",
    "follow_reference",
    "plan_routing",
    "prelabel_batch",
    "publish_batch",
    "read_labelled_file",
    "render_hit_html",
    "route_batch",
    "sync_batch",
]
