"""Pages of the annotation app, in the ``annotation`` URL namespace (config/urls.py gives it, and each
crowd platform's pages, platforms/<name>/urls.py, join it there: ``annotation:prolific-start``)."""

from django.urls import path

from annotation.audit import views as audit
from annotation.batches import views as batches
from annotation.machine import views as machine
from annotation.quality import views as quality

urlpatterns = [
    path("", batches.batch_list, name="batch-list"),
    path("live/", batches.batch_list_live, name="batch-list-live"),
    path("batches/new/", batches.batch_create, name="batch-create"),
    path("batches/new/estimate/", batches.batch_estimate, name="batch-estimate"),
    path("batches/<slug:name>/", batches.batch_detail, name="batch-detail"),
    path("batches/<slug:name>/live/", batches.batch_live, name="batch-live"),
    path("batches/<slug:name>/publish/", batches.batch_publish, name="batch-publish"),
    path("batches/<slug:name>/sync/", batches.batch_sync, name="batch-sync"),
    path("batches/<slug:name>/escalate/", batches.batch_escalate, name="batch-escalate"),
    path("batches/<slug:name>/cancel/", batches.batch_cancel, name="batch-cancel"),
    path("batches/<slug:name>/export/", batches.batch_export, name="batch-export"),
    path("exports/<int:pk>/<str:part>/", batches.export_download, name="export-download"),
    path("batches/<slug:name>/agreement/", batches.batch_agreement, name="batch-agreement"),
    path("batches/<slug:name>/review/", quality.batch_review, name="batch-review"),
    # <key:qid>: any query id (a/b, .., é q) as one segment, escaped by core.converters.
    path("batches/<slug:name>/queries/<key:qid>/", batches.batch_query, name="batch-query"),
    path("batches/<slug:name>/hits/<int:position>/preview/", batches.hit_preview, name="hit-preview"),
    # Machine pre-labelling, calibration and routing (views/machine.py).
    path("batches/<slug:name>/machine/", machine.batch_machine, name="batch-machine"),
    path("batches/<slug:name>/machine/prelabel/", machine.batch_prelabel, name="batch-prelabel"),
    path("batches/<slug:name>/machine/cache/", machine.batch_prelabel_cache, name="batch-prelabel-cache"),
    path(
        "batches/<slug:name>/machine/calibration-sample/",
        machine.batch_calibration_sample,
        name="batch-calibration-sample",
    ),
    path("batches/<slug:name>/calibration/", machine.batch_calibration, name="batch-calibration"),
    path("batches/<slug:name>/calibration/live/", machine.batch_calibration_live, name="batch-calibration-live"),
    path("batches/<slug:name>/calibration/echo/", machine.batch_calibration_echo, name="batch-calibration-echo"),
    path("batches/<slug:name>/routing/", machine.batch_routing, name="batch-routing"),
    # The expert audit sample (annotation/audit/views.py).
    path("batches/<slug:name>/audit/", audit.audit_page, name="batch-audit"),
    path("batches/<slug:name>/audit/draw/", audit.audit_draw, name="batch-audit-draw"),
    path("batches/<slug:name>/audit/import/", audit.audit_import, name="batch-audit-import"),
    path("batches/<slug:name>/audit/trusted/", audit.audit_trust, name="batch-audit-trust"),
    path("batches/<slug:name>/audit/label/", audit.audit_label, name="batch-audit-label"),
]
