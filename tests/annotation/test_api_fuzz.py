"""Schemathesis against the live API with a researcher's token: no request it generates
from the schema gets a 5xx. Bounded (a few examples per operation, fixed seed, a time limit),
on a seeded database so the endpoints have objects to find."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from annotation import services
from core.api_tokens import api_token

from .conftest import answers_for, make_batch

#: Examples per operation: enough to send bad types, missing fields and odd names everywhere.
MAX_EXAMPLES = 6
TIME_LIMIT_SECONDS = 420


@pytest.fixture
def seeded(query_set, researcher, annotators, tmp_path):
    """A collection, runs, a pool, a report, a published local batch with answers (agreement,
    workers, hits, judgments), a draft batch and an export: detail routes and actions have objects."""
    from metrics.services import ReportSettings, build_report
    from pooling.models import QuerySet, Run
    from pooling.services import PoolSettings, build_pool
    from tests.metrics.conftest import PASSAGES, QUERIES, RUN_A, RUN_B, write_run

    (tmp_path / "collection.tsv").write_text("".join(f"{pid}\t{text}\n" for pid, text in PASSAGES.items()))
    (tmp_path / "queries.tsv").write_text("".join(f"{qid}\t{text}\n" for qid, text in QUERIES.items()))
    call_command("import_collection", str(tmp_path / "collection.tsv"), name="tiny", verbosity=0)
    call_command("import_queries", str(tmp_path / "queries.tsv"), name="q", verbosity=0)
    for name, rankings in (("a", RUN_A), ("b", RUN_B)):
        run_file = write_run(tmp_path / f"{name}.trec", rankings)
        call_command("import_run", str(run_file), name=name, collection="tiny", verbosity=0)
    runs = list(Run.objects.order_by("name"))
    build_pool("p", QuerySet.objects.get(name="q"), runs, PoolSettings(2, 2, "tf", "words"), bar=False)
    build_report(
        "rep", QuerySet.objects.get(name="q"), runs, ReportSettings(cutoffs=(1, 2), bootstrap_samples=20), bar=False
    )

    batch = make_batch(query_set)
    services.publish_batch(batch)
    for user in annotators[:2]:
        while (assignment := services.next_assignment(user, batch)) is not None:
            services.submit_local_assignment(assignment, answers_for(assignment))
    services.export_for_download(batch, "all", "tsv")
    make_batch(query_set, name="draft")
    return api_token(researcher)


@pytest.mark.slow
def test_no_request_from_the_schema_gets_a_server_error(seeded, live_server, tmp_path):
    env = {**os.environ, "SCHEMATHESIS_HOOKS": ""}
    command = [
        str(Path(sys.executable).with_name("st")),
        "run",
        f"{live_server.url}/api/schema/",
        "--header",
        f"Authorization: Token {seeded}",
        "--checks",
        "not_a_server_error",
        "--max-examples",
        str(MAX_EXAMPLES),
        "--seed",
        "20261123",
        "--workers",
        "1",
        # Django's test server (live_server) sometimes drops a kept-alive connection under the
        # generator's odd requests: resend on a fresh one. A server error is a 5xx answer, which
        # is never retried, so this hides no failure of the site's own.
        "--request-retries",
        "2",
        "--generation-database",
        "none",
        "--no-color",
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=TIME_LIMIT_SECONDS, env=env, cwd=tmp_path)
    report = result.stdout[-6000:] + result.stderr[-2000:]
    assert result.returncode == 0, report
    tested = re.search(r"(\d+) generated, (\d+) passed", result.stdout)
    assert tested and tested[1] == tested[2] and int(tested[1]) > 500, report  # every request was made and passed
