"""The contributions page and its API give each query's text beside its id (issue 45)."""

from __future__ import annotations

import re

import pytest

from tests.metrics.conftest import QUERIES
from tests.metrics.test_batch_report import _kept_built, built, runs  # noqa: F401  (fixtures)


@pytest.mark.django_db
def test_each_query_id_comes_with_its_text(built, client, django_user_model):  # noqa: F811
    researcher = django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True)
    client.force_login(researcher)
    query = "run=b&metric=ARaB&variant=tf&cutoff=2"
    page = client.get(f"/metrics/{built.name}/contributions/?{query}").content.decode()
    shown = re.findall(r'>([0-9]+)</a><span class="query-text" title="([^"]*)">', page)
    assert shown and all(QUERIES[qid] == text for qid, text in shown)
    assert len(shown) == page.split('id="contributions"')[1].count("?qid=")  # no id without its text
    rows = client.get(f"/api/metrics/reports/{built.name}/contributions/?{query}").json()["rows"]
    assert rows and all(row["query"] == QUERIES[row["qid"]] for row in rows)
