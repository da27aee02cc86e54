"""Publishing from the batch page and the API: the folder comes back as a zip, researchers only,
errors as JSON 4xx; and a 5,000-query batch publishes in seconds (so the request stays synchronous)."""

import io
import zipfile

import pytest

from annotation.results.selectors.labels import query_results
from pooling.models import QuerySet
from pooling.services import create_query_set
from publishing.services.dataset import publication_zip
from publishing.tables import CLASS_NAMES
from tests.publishing.test_dataset_folder import _kept_annotated, annotated  # noqa: F401 (fixture)
from tests.support.batches import answered_batch

FOLDER = [
    "queries.parquet",
    "non_gendered.parquet",
    "aggregated.parquet",
    "README.md",
    "croissant.json",
    "CITATION.cff",
    ".zenodo.json",
]


def _members(content: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _rows(data: bytes) -> list[dict]:
    import pyarrow.parquet as pq

    return pq.read_table(io.BytesIO(data)).to_pylist()


def test_the_batch_page_publishes_a_zip(annotated, researcher, client):  # noqa: F811
    client.force_login(researcher)
    page = client.get(f"/annotation/batches/{annotated.name}/")
    assert b'id="publish-dataset-form"' in page.content and b"choose a license" in page.content
    response = client.post(
        f"/annotation/batches/{annotated.name}/dataset/", {"license": "cc-by-4.0", "with_judgments": "on"}
    )
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"] == 'attachment; filename="b1-dataset.zip"'
    members = _members(response.content)
    assert sorted(members) == sorted(f"b1/{name}" for name in [*FOLDER, "judgments.parquet"])
    queries = _rows(members["b1/queries.parquet"])
    assert [(r["qid"], r["label"]) for r in queries] == [
        (r["qid"], CLASS_NAMES.index(r["label"]) if r["label"] else None) for r in query_results(annotated)
    ]
    assert b'license: "cc-by-4.0"' in members["b1/README.md"]


def test_the_page_requires_a_license_and_a_researcher(annotated, researcher, annotators, client):  # noqa: F811
    client.force_login(researcher)
    response = client.post(f"/annotation/batches/{annotated.name}/dataset/", {})
    assert response.status_code == 302 and response["Location"] == f"/annotation/batches/{annotated.name}/"
    page = client.get(response["Location"])
    assert b"license: This field is required." in page.content
    client.force_login(annotators[0])
    assert client.post(f"/annotation/batches/{annotated.name}/dataset/", {"license": "mit"}).status_code == 403


def test_the_api_answers_the_zip_and_json_errors(annotated, researcher, annotators, client):  # noqa: F811
    url = f"/api/annotation/batches/{annotated.name}/dataset/"
    assert client.post(url, {"license": "mit"}, content_type="application/json").status_code == 403  # anonymous
    client.force_login(annotators[0])
    refused = client.post(url, {"license": "mit"}, content_type="application/json")
    assert refused.status_code == 403 and "detail" in refused.json()
    client.force_login(researcher)
    response = client.post(url, {"license": "odc-by"}, content_type="application/json")
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert sorted(_members(response.content)) == sorted(f"b1/{name}" for name in FOLDER)  # no judgments by default
    missing = client.post(url, {}, content_type="application/json")
    assert missing.status_code == 400 and "license" in missing.json()
    unknown = client.post(url, {"license": "cc-by-5.0"}, content_type="application/json")
    assert unknown.status_code == 400 and "license" in unknown.json()
    assert client.post(url, [1], content_type="application/json").status_code == 400
    nowhere = client.post(
        "/api/annotation/batches/no-such/dataset/", {"license": "mit"}, content_type="application/json"
    )
    assert nowhere.status_code == 404 and nowhere.json()


@pytest.mark.slow
def test_publishing_a_batch_costs_the_same_statements_at_any_size(db, tmp_path):
    """The request is synchronous because it is bounded: the statements it sends do not grow with the
    batch (100 or 2,000 queries, three judgments each). Its time is no test's to assert (5,000 queries
    and 15,000 judgments took 1.4 s on the shared 2-core machine when this test still timed it)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    statements = {}
    for size in (100, 2000):
        query_set = create_query_set(
            f"big{size}", [(str(i), f"query number {i}") for i in range(size)], origin=QuerySet.Origin.IMPORTED
        )
        batch = answered_batch(f"big{size}", query_set)
        with CaptureQueriesContext(connection) as sent:
            _, data = publication_zip(batch, "cc-by-4.0", with_judgments=True)
        statements[size] = len(sent)
        members = _members(data)
        assert len(_rows(members[f"big{size}/queries.parquet"])) == size
        assert len(_rows(members[f"big{size}/judgments.parquet"])) == 3 * size
    assert statements[2000] == statements[100], statements
