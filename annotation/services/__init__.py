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
- :mod:`annotation.quality.services` -- escalation of disputed queries (and its job,
  :mod:`.background`), re-offers, the budget of extras, worker thresholds, training, a
  researcher's adjudication, the quality loop at every sync;
- :mod:`annotation.exports.services` -- exports of the labelled query sets with their
  dataset cards, the Hugging Face-ready dataset folder;
- :mod:`annotation.machine.services` -- pre-labels (and their job, :mod:`.background`), the
  blind calibration sample, routing.

Each crowd platform's writes are in its own app (``platforms/<name>/``), above this one.

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
from annotation.quality.services import background as quality_jobs  # noqa: F401  (escalating)

__all__ = [
    "BatchSettings",
    "audit_routing",
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
