"""A collection by reference reads only the regular files of its folder inside IMPORT_ROOTS (issue 82):
a symbolic link in an import root to a file outside it (a tmp file standing for /etc/passwd) is refused
at registration (API, page form, command), and a link swapped in after registration is refused when a
job reads it, nothing read from outside. Expected messages: the rule as docs/deployment.md states it."""

import json
import os

import pytest
from django.core.management import CommandError, call_command

from core.errors import ServiceError
from core.models import Job
from pooling import services
from pooling.models import Collection, Pool, Run
from pooling.synthetic import write_v2_bundles

pytestmark = pytest.mark.django_db

SECRET = "root:x:0:0:root:/root:/bin/bash"


@pytest.fixture
def root(tmp_path, settings):
    """An import root holding a folder of two real bundles, and a file outside the root."""
    settings.CACHE_DIR = str(tmp_path / "cache")
    settings.IMPORT_ROOTS = [str(tmp_path / "root")]
    folder = write_v2_bundles(tmp_path / "root" / "v2", 200, bundles=2, texts=50)
    outside = tmp_path / "passwd"
    outside.write_text(json.dumps({"pid": "msmarco_passage_02_0", "passage": SECRET}) + "\n")
    return folder, outside


def test_a_link_to_an_outside_file_is_refused_at_registration_by_the_api_and_the_command(
    client, admin_user, root, django_capture_on_commit_callbacks
):
    folder, outside = root
    (folder / "msmarco_passage_02").symlink_to(outside)
    client.force_login(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/api/pooling/imports/collection/",
            {"name": "v2", "path": str(folder), "by_reference": True},
            content_type="application/json",
        )
    assert response.status_code == 400
    assert response.json() == {
        "path": [
            f"{folder / 'msmarco_passage_02'}: not a regular file with one name (a link?): "
            "bundles are read only as the folder's own files"
        ]
    }
    with pytest.raises(CommandError, match=r"msmarco_passage_02: not a regular file with one name"):
        call_command("import_collection", str(folder), name="v2", by_reference=True, verbosity=0)
    assert not Collection.objects.exists() and not Job.objects.exists()


def test_a_link_swapped_in_after_registration_fails_the_pool_job_reading_nothing_outside(
    client, admin_user, root, tmp_path, django_capture_on_commit_callbacks
):
    folder, _ = root
    v2 = services.register_collection_by_reference(folder, "v2", kind="msmarco-v2").obj
    bundle = folder / "msmarco_passage_01"
    first = json.loads(bundle.read_text().split("\n", 1)[0])
    queries = tmp_path / "q.tsv"
    queries.write_text("1\twho\n")
    services.import_queries(queries, "q")
    run_file = tmp_path / "r.trec"
    run_file.write_text(f"1 Q0 {first['pid']} 1 9 r\n")
    services.import_run(run_file, "r", v2)
    # The same bytes, moved outside the root and linked back: the fingerprint alone would not tell.
    moved = tmp_path / "moved"
    os.replace(bundle, moved)
    bundle.symlink_to(moved)
    client.force_login(admin_user)
    body = {"name": "p", "queries": "q", "runs": ["r"], "depth": 1, "rank_cutoff": 1}
    with (
        pytest.raises(ServiceError, match="msmarco_passage_01: not a regular file"),  # run inline here: it raises
        django_capture_on_commit_callbacks(execute=True),
    ):
        client.post("/api/pooling/pools/", body, content_type="application/json")
    job = Job.objects.get(kind="pool")
    assert job.status == Job.Status.FAILED
    assert f"collection 'v2': {bundle}: not a regular file with one name (a link?)" in job.message
    assert not Pool.objects.filter(name="p").exists()
    assert not (tmp_path / "cache" / "texts").exists() or not any((tmp_path / "cache" / "texts").rglob("*.parquet"))
    with pytest.raises(ServiceError, match="msmarco_passage_01: not a regular file with one name"):
        services.texts_checksum(v2, [first["pid"]])
    assert Run.objects.get(name="r").rows == 1


def test_a_registered_folder_swapped_for_a_link_is_refused_when_read(root, tmp_path):
    folder, _ = root
    v2 = services.register_collection_by_reference(folder, "v2", kind="msmarco-v2").obj
    os.replace(folder, tmp_path / "elsewhere")
    folder.symlink_to(tmp_path / "elsewhere")  # the same bundles, now outside the root
    with pytest.raises(ServiceError, match=r"now leads through a symbolic link elsewhere; only the folder registered"):
        services.texts_checksum(v2, ["msmarco_passage_00_0"])
