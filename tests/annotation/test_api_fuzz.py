"""Schemathesis against the live API with a researcher's token: no request it generates
from the schema gets a 5xx. Bounded (a few examples per operation, fixed seed, a time limit),
on a seeded database so the endpoints have objects to find.

Path parameters name the seeded objects (``schemathesis.toml``, written next to the run): a
random slug finds nothing, so without it the machine-labelling endpoints (pre-label, calibration
sample, calibration report, routing preview and routing, the answer cache) and the team's would
only ever answer 404 and their bodies would never be read. The machine-labelling and team
operations get a fixed seeded batch (every example reads its body against it); the other path
parameters take the seeded names most of the time (a dictionary; hostile and unknown names are
the sweep's, ``test_api_sweep.py``). The run's events (NDJSON) are read back to check that each
of those operations reached its object several times and answered its success at least once.

The schema is the site's own, read from it, less one media type: a request body offered both as
``multipart/form-data`` and ``application/x-www-form-urlencoded`` is fuzzed as multipart only. DRF's two
form parsers give the views the same ``QueryDict``, so the second copy of every form case (a sixth of
the cases, most of them the coverage phase's) tested nothing the first did not.
"""

import json
import os
import re
import subprocess
import sys
import urllib.request
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import call_command

from annotation import services
from annotation.exports.services import export_for_download
from annotation.machine.prelabellers.chat_answers import Sampled
from annotation.machine.services.calibration import create_calibration_sample
from annotation.machine.services.prelabels import DatabaseAnswerCache, prelabel_batch
from core.services.api_tokens import api_token
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from pooling.models import QuerySet
from pooling.services import create_query_set
from tests.annotation.conftest import answers_for, make_batch
from tests.annotation.machine.test_prelabelling_pages import _queries, answer_until_in

#: Examples per operation: enough to send bad types, missing fields and odd names everywhere.
MAX_EXAMPLES = 6
TIME_LIMIT_SECONDS = 420


@pytest.fixture
def seeded(query_set, researcher, annotators, tmp_path):
    """A collection, runs, a pool, a report, a published local batch with answers (agreement,
    workers, hits, judgments), a draft batch, an export, machine-labelled batches (one calibrated)
    and cached chat answers: detail routes and actions have objects."""
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
        while (assignment := next_assignment(user, batch)) is not None:
            submit_local_assignment(assignment, answers_for(assignment))
    export_for_download(batch, "all", "tsv")
    make_batch(query_set, name="draft")
    _seed_machine_labelling()
    return api_token(researcher)


#: Batch names the machine-labelling endpoints find: ``mb`` pre-labelled by the rules with its blind
#: sample (``mb-part-1``) published and answered (report, routing preview and routing), ``mc``
#: pre-labelled only (a first calibration sample can be drawn).
MACHINE_BATCHES = ("mb", "mc", "mb-part-1")
#: Models with cached chat answers (``/`` in a model name is ``~2F`` in its path segment).
CACHED_MODELS = {"gpt-4o-mini": ("v1", "v2"), "org/chat-model": ("v1",)}


def _seed_machine_labelling() -> None:
    settings = services.BatchSettings(
        provider="local", assignments_per_query=3, queries_per_hit=10, reward=Decimal("0.05")
    )
    machine = services.create_batch(
        "mb", settings, query_set=create_query_set("mq", _queries(120), origin=QuerySet.Origin.IMPORTED)
    )
    prelabel_batch(machine, "rules")
    services.publish_batch(create_calibration_sample(machine, 60, seed=1))
    answer_until_in(machine)  # 4 annotators at 0.85, then its escalations: routing waits for them (issue 58)
    fresh = services.create_batch(
        "mc", settings, query_set=create_query_set("mq2", _queries(40), origin=QuerySet.Origin.IMPORTED)
    )
    prelabel_batch(fresh, "rules")
    cache = DatabaseAnswerCache()
    for model, versions in CACHED_MODELS.items():
        for version in versions:
            for text in ("what is a synapse", "queen of england"):
                cache.put(model, version, text, Sampled(['{"label": "n"}'], 30, 5, 1))


#: Values for path parameters (each drawn with PATH_PROBABILITY; otherwise Schemathesis's own).
NAMES = [*MACHINE_BATCHES, "b1", "draft", "gq", "tiny", "q", "a", "b", "p", "rep"]
PATH_PROBABILITY = 0.8
VALUE_PROBABILITY = 0.5
#: Answers per machine-labelling operation that must have reached its object.
MIN_REACHED = 3
#: Operations that must have reached a seeded object (answers other than 404) several times, and
#: with the success they answer (202 a job started, 201 created, 200) at least once.
MACHINE_OPERATIONS = {
    "POST /api/annotation/batches/{name}/prelabel/": 202,
    "GET /api/annotation/batches/{name}/prelabels/": 200,
    "POST /api/annotation/batches/{name}/calibration-sample/": 201,
    "GET /api/annotation/batches/{name}/calibration/": 200,
    "GET /api/annotation/batches/{name}/routing/": 200,
    "POST /api/annotation/batches/{name}/routing/": 201,
    "DELETE /api/annotation/prelabel-cache/{model}/": 200,
    "GET /api/annotation/prelabel-cache/": 200,
    "GET /api/annotation/batches/{name}/team/": 200,
    "PUT /api/annotation/batches/{name}/team/": 200,
    "GET /api/annotation/annotators/{username}/": 200,
    "POST /api/annotation/annotators/{username}/reset-password/": 200,
}


def _config() -> str:
    """``schemathesis.toml``: seeded names as dictionaries bound to the path parameters."""

    def values(items) -> str:
        return json.dumps(list(items))

    models = [name.replace("/", "~2F") for name in CACHED_MODELS]
    return rf"""
[dictionaries.names]
values = {values(NAMES)}
[dictionaries.models]
values = {values(models)}
[dictionaries.usernames]
values = {values(["ann-a", "ann-b", "ann-c", "researcher"])}
[dictionaries.kinds]
values = ["collection", "queries", "run", "wordlist", "qrels", "dataset"]
[dictionaries.accuracies]
values = [0.5, 0.8, 0.9, 0.95]
[dictionaries.risks]
values = [0.05, 0.1, 0.3]
[dictionaries.samples]
values = [3, 5, 10]
[dictionaries.labellers]
values = ["rules", "trained", "openai"]

[parameters]
"path.name" = {{ dictionary = "names", probability = {PATH_PROBABILITY} }}
"path.model" = {{ dictionary = "models", probability = {PATH_PROBABILITY} }}
"path.username" = {{ dictionary = "usernames", probability = {PATH_PROBABILITY} }}
"path.kind" = {{ dictionary = "kinds", probability = {PATH_PROBABILITY} }}
# Values in range half of the time, so that routing plans and samples get drawn, not only refused
# (the schema cannot say "in (0, 1]", so most generated numbers are out of range).
"query.target_accuracy" = {{ dictionary = "accuracies", probability = {VALUE_PROBABILITY} }}
"body.target_accuracy" = {{ dictionary = "accuracies", probability = {VALUE_PROBABILITY} }}
"query.risk" = {{ dictionary = "risks", probability = {VALUE_PROBABILITY} }}
"body.risk" = {{ dictionary = "risks", probability = {VALUE_PROBABILITY} }}
"body.sample" = {{ dictionary = "samples", probability = {VALUE_PROBABILITY} }}
"body.labeller" = {{ dictionary = "labellers", probability = {VALUE_PROBABILITY} }}

# Cancelling would end the machine batches' path (or their sample's, a name Schemathesis also takes
# from earlier answers) before their endpoints are reached: the draft batch only.
[[operations]]
include-path-regex = "/cancel/$"
parameters = {{ "path.name" = "draft" }}

# Every example of these reads its body against a seeded object (random and hostile names are the
# sweep's, tests/annotation/test_api_sweep.py): the calibrated batch, the pre-labelled one, the team's.
[[operations]]
include-path-regex = '/batches/\{{name\}}/(prelabels|calibration)/$'
parameters = {{ "path.name" = "mb" }}

# Pre-labelling again puts a new labeller in force, whose sample is still to draw: on ``mc``, so that
# ``mb`` keeps its answered sample for the report and routing.
[[operations]]
include-path-regex = '/batches/\{{name\}}/(prelabel|calibration-sample)/$'
parameters = {{ "path.name" = "mc" }}

# A target the plan can meet, the other fields generated: otherwise nearly every example is refused
# for its target alone (the coverage phase sends the schema's boundaries: 0, negatives, huge). The
# fuzzing phase's bodies (not the coverage phase's) take the body values: one routes by the point
# estimate (60 sample queries certify nothing at 0.9), the later ones are refused (routed already).
[[operations]]
include-path-regex = '/batches/\{{name\}}/routing/$'
parameters = {{ "path.name" = "mb", "query.target_accuracy" = 0.9, "body.target_accuracy" = 0.9, "body.no_guarantee" = true }}

[[operations]]
include-path-regex = '/batches/\{{name\}}/team/$'
parameters = {{ "path.name" = "b1" }}
"""


FORM, MULTIPART = "application/x-www-form-urlencoded", "multipart/form-data"


def _schema(url: str, token: str) -> dict:
    """The live site's OpenAPI schema, each body offered as multipart not offered form-encoded too."""
    request = urllib.request.Request(f"{url}/api/schema/?format=json", headers={"Authorization": f"Token {token}"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        schema = json.load(answer)
    dropped = 0
    for operations in schema["paths"].values():
        for operation in operations.values():
            content = operation.get("requestBody", {}).get("content", {}) if isinstance(operation, dict) else {}
            if FORM in content and MULTIPART in content:
                del content[FORM]
                dropped += 1
    assert dropped > 10, dropped  # the site's forms: most endpoints that take JSON take both
    return schema


def _answers_per_operation(events: Path) -> dict[str, list[int]]:
    """Status codes per ``METHOD /path`` from the NDJSON events of the run."""
    statuses: dict[str, list[int]] = defaultdict(list)

    def walk(node, label=None):
        if isinstance(node, dict):
            label = node.get("label", label) if isinstance(node.get("label"), str) else label
            response = node.get("response")
            if isinstance(response, dict) and isinstance(response.get("status_code"), int) and label:
                statuses[label].append(response["status_code"])
            for key, value in node.items():
                if key != "response":
                    walk(value, label)
        elif isinstance(node, list):
            for item in node:
                walk(item, label)

    for line in events.read_text().splitlines():
        walk(json.loads(line))
    return statuses


@pytest.mark.slow
def test_no_request_from_the_schema_gets_a_server_error(seeded, live_server, tmp_path):
    env = {**os.environ, "SCHEMATHESIS_HOOKS": ""}
    (tmp_path / "schemathesis.toml").write_text(_config())
    (tmp_path / "schema.json").write_text(json.dumps(_schema(live_server.url, seeded)))
    events = tmp_path / "events.ndjson"
    command = [
        str(Path(sys.executable).with_name("st")),
        "--config-file",
        str(tmp_path / "schemathesis.toml"),
        "run",
        str(tmp_path / "schema.json"),
        "--url",
        live_server.url,
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
        "--report",
        "ndjson",
        "--report-ndjson-path",
        str(events),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=TIME_LIMIT_SECONDS, env=env, cwd=tmp_path)
    report = result.stdout[-6000:] + result.stderr[-2000:]
    assert result.returncode == 0, report
    tested = re.search(r"(\d+) generated, (\d+) passed", result.stdout)
    assert tested and tested[1] == tested[2] and int(tested[1]) > 500, report  # every request was made and passed
    selected, operations = re.search(r"Selected: (\d+)/\d+\s+Tested: (\d+)", result.stdout).groups()
    assert selected == operations, report  # every operation of the schema was tested
    answers = _answers_per_operation(events)
    for operation, success in MACHINE_OPERATIONS.items():
        # Reached: the object was found and the request read (not 404, nor refused for the method or
        # the caller by Schemathesis's own probes: 405, 403/401).
        codes = answers.get(operation, [])
        reached = [code for code in codes if code not in (401, 403, 404, 405)]
        assert len(reached) >= MIN_REACHED and success in codes, (operation, sorted(codes), report)
