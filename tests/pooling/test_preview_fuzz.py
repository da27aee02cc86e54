"""Import previews under hostile input: every kind, name and content answers 200 or 400, never a 5xx.

Contents are the shapes that broke readers before (names such as ``..gz``, grades past a
32-bit integer, Python-only digits, control characters, invalid UTF-8, truncated and
corrupt gzip, a line over the limit, random bytes); each is sent to every kind of preview
under several names.
"""

import gzip

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

KINDS = ["collection", "queries", "run", "wordlist", "qrels"]
NAMES = ["..gz", "...gz", "x..gz", ".gz", "a.tsv", "con.gz", "é ü.tsv.gz", "-.gz", "~"]
_rng = np.random.default_rng(27)
CONTENTS = {
    "empty": b"",
    "grade": b"1 0 d1 99999999999\n1 0 d2 1_0\n1 0 d3 \xd9\xa3\n",
    "controls": "1\tq\u2028r\x85s\x0bt\x0cu\rv\n2\ta\tb\tc\n".encode(),
    "bad-utf8": b"1\t\xff\xfe bad\n",
    "nul": b"\0" * 1000,
    "long-line": b"1\t" + b"x" * (300 * 1024) + b"\n",
    "gzip-cut": gzip.compress(b"1\tquery\n" * 10_000)[:200],
    "gzip-corrupt": b"\x1f\x8b\x08\x00" + bytes(_rng.integers(0, 256, 500, dtype=np.uint8)),
    "gzip-bomb-head": gzip.compress(b"\0" * (4 * 1024 * 1024)),
    "random": bytes(_rng.integers(0, 256, 2000, dtype=np.uint8)),
    "bom-crlf": b"\xef\xbb\xbf1\tq\r\n2\tr\r\n",
    "run-huge-numbers": b"1 Q0 d1 99999999999999999999 1e400 t\n1 Q0 d2 -1 nan t\n",
}


@pytest.fixture
def researcher_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True))
    return client


#: Kinds whose preview sweep took over 2 s in two of three measured runs (-n 2, shared 2 cores).
SLOW_PREVIEWS = {"collection", "queries"}


@pytest.mark.django_db
@pytest.mark.parametrize(
    "kind", [pytest.param(kind, marks=pytest.mark.slow) if kind in SLOW_PREVIEWS else kind for kind in KINDS]
)
def test_no_preview_answers_a_5xx(researcher_client, kind):
    url = reverse("pooling:import-preview", args=[kind])
    failures = []
    for label, content in CONTENTS.items():
        for name in NAMES:
            response = researcher_client.post(url, {"file": SimpleUploadedFile(name, content)})
            if response.status_code not in (200, 400):
                failures.append((label, name, response.status_code))
    assert failures == []


#: Names for the API imports (each upload runs a whole import job: fewer than the previews').
API_NAMES = ["..gz", "...gz", "é ü.tsv.gz", "a.tsv"]
#: What each kind needs beside the file (``world``'s collection and query set).
API_FIELDS = {"run": {"collection": "tiny"}, "qrels": {"collection": "tiny", "queries": "q"}}


def _pooling_rows() -> dict[str, int]:
    """Rows per model of the pooling app: an import that failed must leave them as they were."""
    from django.apps import apps

    return {model.__name__: model.objects.count() for model in apps.get_app_config("pooling").get_models()}


@pytest.mark.slow
@pytest.mark.django_db
@pytest.mark.parametrize("kind", KINDS)
def test_no_api_import_answers_a_5xx_or_leaves_half_an_object(
    researcher_client, world, kind, django_capture_on_commit_callbacks
):
    """``POST /api/pooling/imports/<kind>/`` with the same uploads: a 4xx JSON refusal naming why, or
    a job (202) that ends done or failed with a message; a failed one leaves no row behind (nothing
    half-written), and no upload stays in the staging folder."""
    from django.conf import settings

    from core.models import Job
    from tests.pooling.test_imports import _staging_files

    url = f"/api/pooling/imports/{kind}/"
    failures, outcomes = [], []
    for number, (label, content) in enumerate(CONTENTS.items()):
        for name in API_NAMES:
            before = _pooling_rows()
            data = {"name": f"fz{number}-{API_NAMES.index(name)}", "file": SimpleUploadedFile(name, content)}
            with django_capture_on_commit_callbacks(execute=True):
                response = researcher_client.post(url, data | API_FIELDS.get(kind, {}))
            status = response.status_code
            if status >= 500 or not response["Content-Type"].startswith("application/json"):
                failures.append((label, name, status, response.content[:200]))
                continue
            if status != 202:
                body = response.json()
                if not (400 <= status < 500 and body and all(body.values())) or _pooling_rows() != before:
                    failures.append((label, name, status, body))
                outcomes.append("refused")
                continue
            job = Job.objects.get(pk=response.json()["id"])
            outcomes.append(job.status)
            if job.status == Job.Status.FAILED:
                if not job.message or _pooling_rows() != before:
                    failures.append((label, name, "failed, half-written", job.message, _pooling_rows(), before))
                if str(settings.CACHE_DIR) in job.message:  # the message names the upload, not the server's folder
                    failures.append((label, name, "server path", job.message))
            elif job.status != Job.Status.DONE:
                failures.append((label, name, "job left", job.status))
    assert failures == []
    assert _staging_files() == []
    # Hostile uploads are mostly refused by the job; some (a BOM, CRLF) are fine files.
    assert outcomes.count(Job.Status.FAILED) > len(outcomes) / 2, outcomes
