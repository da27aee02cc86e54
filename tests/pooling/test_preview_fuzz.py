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


@pytest.mark.django_db
@pytest.mark.parametrize("kind", KINDS)
def test_no_preview_answers_a_5xx(researcher_client, kind):
    url = reverse("pooling:import-preview", args=[kind])
    failures = []
    for label, content in CONTENTS.items():
        for name in NAMES:
            response = researcher_client.post(url, {"file": SimpleUploadedFile(name, content)})
            if response.status_code not in (200, 400):
                failures.append((label, name, response.status_code))
    assert failures == []
