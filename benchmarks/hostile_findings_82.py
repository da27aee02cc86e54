"""The hostile round's second part (issue 82): each finding of the sixth round tried again through the entry
a user or an attacker reaches (the API, a page, a command, the sweeper); kinds as in
:mod:`benchmarks.hostile_findings_68`."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from importlib.util import find_spec
from io import StringIO
from pathlib import Path
from unittest import mock
from urllib.parse import urlencode

from django.conf import settings
from django.core.management import CommandError, call_command
from django.test import override_settings
from django.test.client import MULTIPART_CONTENT
from django.utils import timezone

from benchmarks.hostile_labs import B_SENSITIVITY, client
from benchmarks.hostile_sweep import tried, verdict
from core.db.scope import acting_in
from core.jobs.in_process import inline_jobs
from core.jobs.sweeper import sweep_jobs
from core.models import Job
from core.tasks import task_for, worker_identity
from pooling.models import Collection
from pooling.services import import_queries, import_run, texts_by_reference, texts_checksum
from pooling.synthetic import write_v2_bundles


def findings_of_issue_82(world, lab_b_paths: list[tuple[str, str]]) -> list[tuple[str | None, str]]:
    """``(kind, line)`` per attempt, kind ``None`` when refused; ``lab_b_paths`` are lab B's viewer's GETs."""
    folder = Path(tempfile.mkdtemp(prefix="hostile-82-"))
    out: list[tuple[str | None, str]] = []
    checks = (_sparse_bundle, _linked_bundles, _measure_numbers, _dataset_ids, _webhook_event_types,
              _viewer_gets, _paper_doi, _exhausted_job)  # fmt: skip
    with override_settings(IMPORT_ROOTS=[str(folder / "root")], CACHE_DIR=str(folder / "cache")):
        (folder / "root").mkdir()
        for check in checks:
            out += tried(check, world, lab_b_paths if check is _viewer_gets else folder)
    return out


#: Peak memory growth past which reading one bundle line is round six's unbounded read.
_BUNDLE_GROWTH = 64 * 2**20


def _sparse_bundle(world, folder) -> list[tuple[str | None, str]]:
    """A newline-free sparse bundle of 400 MB registered by reference, then read by a pool job, both through the
    API: refused (the job failed naming the line), memory bounded."""
    bundles = write_v2_bundles(folder / "root" / "sparse", 20, bundles=2, texts=10)
    with open(bundles / "msmarco_passage_02", "wb") as f:  # the issue's input: a start, then 400 MB of nothing
        f.write(b'{"pid": "msmarco_passage_02_0", "passage": "')
        f.truncate(400 * 2**20)
    researcher = client(world["b-researcher"])
    body = {"name": "hr-82-sparse", "path": str(bundles), "by_reference": True}
    with inline_jobs():
        answer = researcher.post("/api/pooling/imports/collection/", body, content_type="application/json")
    out = [verdict("Low", "by reference: a folder with a newline-free sparse bundle", answer.status_code, False)]
    collection = Collection._base_manager.filter(name="hr-82-sparse").first()
    if collection is None:
        return [*out, (None, f"the sparse bundle's folder refused at registration -> {answer.status_code}")]
    queries, run = _lab_b_run(world, folder, collection, "msmarco_passage_02_0")
    pool = {"name": "hr-82-sparse-pool", "queries": queries, "runs": [run], "depth": 1, "rank_cutoff": 1}
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    tracemalloc.start()
    try:
        with inline_jobs():
            try:
                answer = researcher.post("/api/pooling/pools/", pool, content_type="application/json")
                status = answer.status_code
            except Exception as exc:  # an inline job raises what it raised; its Job row says the rest
                status = type(exc).__name__
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - rss
    job = Job._base_manager.filter(kind="pool", group=world["b"]).order_by("-pk").first()
    refused = job is not None and job.status == Job.Status.FAILED and "longer than" in job.message
    what = f"pool over the sparse bundle -> {status}; traced peak {peak / 2**20:.1f} MiB, RSS +{grown / 2**20:.1f} MiB"
    if max(peak, grown) > _BUNDLE_GROWTH:
        return [*out, ("Medium", f"{what}: memory unbounded")]
    return [*out, (None if refused else "Low", f"{what}; job {job.status if job else None}: "
                   f"{(job.message if job else '')[:160]}")]  # fmt: skip


def _lab_b_run(world, folder, collection, pid: str) -> tuple[str, str]:
    """A query set and a run of lab B ranking ``pid`` of ``collection`` (by reference: ids not checked)."""
    name = f"hr-82-{collection.name}"
    (folder / f"{name}.tsv").write_text("1\twho is she\n")
    (folder / f"{name}.trec").write_text(f"1 Q0 {pid} 1 9 r\n")
    with acting_in(world["b"].pk):
        import_queries(folder / f"{name}.tsv", f"{name}-q")
        import_run(folder / f"{name}.trec", f"{name}-run", collection)
    return f"{name}-q", f"{name}-run"


def _linked_bundles(world, folder) -> list[tuple[str | None, str]]:
    """Links out of an import root registered by reference, then a bundle linked back after a registration (the
    same bytes: the fingerprint alone cannot tell); the outside file has a size of its own, to be recognised."""
    secret = "root:x:0:0:root:/root:/bin/bash hostile-82"
    outside = folder / "passwd"
    line = json.dumps({"pid": "msmarco_passage_00_0", "passage": secret})
    outside.write_text(line[:-2] + " " * (54_321 - len(line) - 1) + line[-2:] + "\n")  # a size of its own
    digest = hashlib.sha256(outside.read_bytes()).hexdigest()[:12]
    researcher = client(world["b-researcher"])
    out = []
    linked = write_v2_bundles(folder / "root" / "linked", 20, bundles=1, texts=10)
    (linked / "msmarco_passage_01").symlink_to(outside)
    alone = folder / "root" / "alone"
    alone.mkdir()
    (alone / "msmarco_passage_00").symlink_to(outside)
    cases = (("a folder of bundles and a link to an outside file", linked), ("a folder of only that link", alone),
             ("the link itself", linked / "msmarco_passage_01"), ("/etc/passwd", Path("/etc/passwd")))  # fmt: skip
    for label, path in cases:
        body = {"name": "hr-82-linked", "path": str(path), "by_reference": True}
        answer = researcher.post("/api/pooling/imports/collection/", body, content_type="application/json")
        made = Collection._base_manager.filter(name="hr-82-linked").first()
        shown = answer.content.decode() + researcher.get("/api/pooling/collections/").content.decode()
        if made is not None:
            shown += researcher.get(f"/api/pooling/collections/{made.name}/").content.decode()
        what = f"by reference, {label}"
        if secret in shown:
            out.append(("High", f"{what} -> {answer.status_code}: shows the outside file's text"))
        elif re.search(r"\b54,?321\b", shown) or digest in shown or (made is not None and label.endswith("link")):
            out.append(("Medium", f"{what} -> {answer.status_code}: shows the outside file's size or a hash of it"))
        else:
            out.append(verdict("Low", f"{what}{': registered' * bool(made)}", answer.status_code, made is not None))
        Collection._base_manager.filter(name="hr-82-linked").delete()
    swapped = write_v2_bundles(folder / "root" / "swapped", 20, bundles=2, texts=10)
    body = {"name": "hr-82-swapped", "path": str(swapped), "by_reference": True}
    answer = researcher.post("/api/pooling/imports/collection/", body, content_type="application/json")
    collection = Collection._base_manager.filter(name="hr-82-swapped").first()
    if collection is None:
        return [*out, ("Low", f"a folder of plain bundles refused by reference -> {answer.status_code}")]
    bundle = swapped / "msmarco_passage_01"
    os.replace(bundle, folder / "moved")  # outside the import root, the same bytes
    bundle.symlink_to(folder / "moved")
    for name, read in (("texts", texts_by_reference), ("checksum", texts_checksum)):
        with acting_in(world["b"].pk):
            try:
                read(collection, ["msmarco_passage_01_0"])
                out.append(("Low", f"a link swapped in after registration: {name} read the file outside the roots"))
            except Exception as exc:  # the refusal: the reader's InputError as a ServiceError
                refused = "symbolic link" in str(exc) or "not a regular file" in str(exc)
                out.append((None if refused else "Low", f"a link swapped in, {name}: {str(exc)[:140]}"))
    return out


def _measure_numbers(world, folder) -> list[tuple[str | None, str]]:
    """``P@99999999999999999999`` and ``RaB@١٠`` in a report request: a JSON 400 on measures, no job."""
    researcher = client(world["b-researcher"])
    out = []
    for measures in ("P@99999999999999999999", "RaB@١٠", "nDCG@١٠"):
        jobs = Job._base_manager.count()
        body = {"name": "hr-82-big", "queries": "zz-lab-b-q", "runs": ["zz-lab-b-a"], "cutoffs": "2",
                "qrels": "zz-lab-b-qrels", "measures": measures}  # fmt: skip
        answer = researcher.post("/api/metrics/reports/", body, content_type="application/json")
        refused = answer.status_code == 400 and "measures" in answer.content.decode()
        taken = not refused or Job._base_manager.count() != jobs
        out.append(verdict("Low", f"report measures={measures}", answer.status_code, taken))
    return out


def _dataset_ids(world, folder) -> list[tuple[str | None, str]]:
    """``nosuch/dataset`` to the dataset import (API and page): refused on its field, no job, the id unrewritten."""
    if find_spec("ir_datasets") is None:
        return [(None, "nosuch/dataset: ir_datasets not installed (the import is off)")]
    researcher = client(world["b-researcher"])
    out = []
    body = {"name": "hr-82-ds", "dataset": "nosuch/dataset"}
    for path, kind in (
        ("/api/pooling/imports/dataset/", "application/json"),
        ("/pooling/import/dataset/", MULTIPART_CONTENT),
    ):
        jobs = Job._base_manager.count()
        answer = researcher.post(path, body, content_type=kind)
        text = answer.content.decode()
        ok = (
            answer.status_code == 400 and "has no dataset &#x27;nosuch/dataset&#x27;" in text
        ) or "has no dataset 'nosuch/dataset'" in text
        taken = not ok or Job._base_manager.count() != jobs or "ir_nosuch" in text
        out.append(verdict("Low", f"{path} dataset=nosuch/dataset", answer.status_code, taken))
    return out


def _webhook_event_types(world, folder) -> list[tuple[str | None, str]]:
    """A signed Prolific webhook body of an event type the site does not subscribe to: 4xx, no row."""
    from platforms.prolific.models import ProlificEvent  # the platform may be removed (test_platform_removal)

    secret = "hostile-82-webhook-secret-0123456789"
    out = []
    for event_type in ("study.unknown_thing", "Study.Status.Change", "submission.status.change "):
        body = json.dumps({"resource_id": "0" * 24, "event_type": event_type, "status": "RETURNED"}).encode()
        stamp = str(int(time.time()))
        signature = base64.b64encode(hmac.new(secret.encode(), stamp.encode() + body, hashlib.sha256).digest())
        headers = {"HTTP_X_PROLIFIC_REQUEST_SIGNATURE": signature.decode(), "HTTP_X_PROLIFIC_REQUEST_TIMESTAMP": stamp,
                   "HTTP_X_EVENT_ID": f"hostile-82-{event_type.strip()}"}  # fmt: skip
        rows = ProlificEvent._base_manager.count()
        with (
            override_settings(PROLIFIC_WEBHOOKS=True),
            mock.patch("platforms.prolific.webhooks.services.deliveries._secret", return_value=secret),
        ):
            answer = client(None).post(
                "/annotation/prolific/webhooks/events/", body, content_type="application/json", **headers
            )
        stored = ProlificEvent._base_manager.count() != rows
        taken = stored or not 400 <= answer.status_code < 500
        out.append(verdict("Low", f"signed webhook of event type {event_type!r}", answer.status_code, taken))
    return out


def _viewer_gets(world, lab_b_paths: list[tuple[str, str]]) -> list[tuple[str | None, str]]:
    """Lab B's viewer GETs every URL pattern of ``lab_b_paths`` with round six's label-sensitivity flood as the
    query string: no Job is made by a viewer."""
    viewer = client(world["b-viewer"])
    query = urlencode({"batch": world["b-sens"].name, **B_SENSITIVITY})
    out = []
    for name, path in lab_b_paths:
        before = Job._base_manager.count()
        with inline_jobs():
            try:
                answer = viewer.get(f"{path}?{query}")
                status = answer.status_code
                if status >= 500 and getattr(answer, "exc_info", None):  # what the 500 was, for the report
                    name = f"{name}: {answer.exc_info[0].__name__}: {str(answer.exc_info[1])[:200]}"
            except Exception as exc:  # an inline job raises what it raised
                status = 500
                name = f"{name} ({type(exc).__name__})"
        made = list(Job._base_manager.filter(pk__gt=0).order_by("-pk")[: Job._base_manager.count() - before])
        kinds = sorted(job.kind for job in made)
        out.append(verdict("Low", f"lab B viewer GET {path} ({name}){f' made jobs {kinds}' if made else ''}",
                           status, bool(made)))  # fmt: skip
    by_viewer = Job._base_manager.filter(started_by=world["b-viewer"]).count()
    out.append(("Low" if by_viewer else None, f"jobs started by lab B's viewer: {by_viewer}"))
    return out


def _paper_doi(world, folder) -> list[tuple[str | None, str]]:
    """``paper --dataset`` with ``"}\\input{/etc/passwd}`` after a DOI: refused before anything is written."""
    out_folder = folder / "paper"
    with acting_in(world["b"].pk):
        try:
            call_command("paper", world["b-report"].name, out=str(out_folder), dataset='10.5281/zenodo.1234"}\\input{/etc/passwd}', stdout=StringIO(), stderr=StringIO())  # fmt: skip
            return [("Low", "paper --dataset took a DOI with LaTeX after it")]
        except CommandError as exc:
            written = out_folder.exists()
            return [(("Low" if written else None), f"paper --dataset: {str(exc)[:120]}{' (written)' * written}")]


def _exhausted_job(world, folder) -> list[tuple[str | None, str]]:
    """A job RUNNING under a dead process at its last attempt (``JOB_MAX_ATTEMPTS``): the sweeper fails it
    with the reason, sends it no more and runs nothing inline."""
    publish_batch_task = task_for("annotation.publish")
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    batch = world["b-batch"]
    unpublished = batch.hits.filter(provider_id=None).count() if hasattr(batch, "hits") else None
    job = Job._base_manager.create(
        kind="annotation.publish", task=publish_batch_task.name, arguments=[batch.pk], group=world["b"],
        status=Job.Status.RUNNING, attempts=getattr(settings, "JOB_MAX_ATTEMPTS", 3), message_id="hostile-82-last",
        worker=f"{worker_identity().rpartition(':')[0]}:{process.pid}", heartbeat=timezone.now(),
    )  # fmt: skip
    sweep = sweep_jobs()
    job.refresh_from_db()
    failed = job.status == Job.Status.FAILED and "died" in job.message and job.message_id == "hostile-82-last"
    ran = unpublished is not None and batch.hits.filter(provider_id=None).count() != unpublished
    again = sweep_jobs()
    taken = not failed or ran or job.pk in again.failed + again.resent
    return [(("Low" if taken else None), f"a job at its last attempt under a dead pid: {job.status}, swept "
             f"failed={sweep.failed[:3]} resent={sweep.resent[:3]}: {job.message[:120]}")]  # fmt: skip
