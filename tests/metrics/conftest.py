"""A small world for report tests: a collection, a query set, three runs; a batch of in-house answers on it."""

from decimal import Decimal

import pytest
from django.core.management import call_command

from annotation import services as annotation_services
from platforms.inhouse.services.annotators import create_annotator
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from pooling.models import QuerySet
from tests.support.kept_state import kept

PASSAGES = {
    "d1": "She and her sister",  # definitional f = 3; representative f = 3
    "d2": "He met his father",  # m = 3
    "d3": "nothing gendered here",
    "d4": "the man and the woman",  # f = 1, m = 1
}
QUERIES = {"1": "who is she", "2": "what is a synapse", "3": "who is he"}
RUN_A = {"1": ["d1", "d3"], "2": ["d3", "d4"], "3": ["d2", "d1"]}
RUN_B = {"1": ["d3", "d1"], "2": ["d2"], "4": ["d4"]}  # lacks query 3; query 4 is not in the set
RUN_C = {"1": ["d4", "d3"], "2": ["d4", "d3"], "3": ["d3", "d4"]}


def write_run(path, rankings):
    lines = [
        f"{qid} Q0 {doc} {rank} {10 - rank} tag\n"
        for qid, docs in rankings.items()
        for rank, doc in enumerate(docs, start=1)
    ]
    path.write_text("".join(lines))
    return path


@pytest.fixture(autouse=True)
def _no_screenshots_unless_browser(request, settings):
    """Paper bundles built in these tests keep the task page's HTML but take no screenshot (a browser
    start per bundle); the browser-marked tests take it."""
    if request.node.get_closest_marker("browser") is None:
        settings.PAPER_SCREENSHOTS = False


def _world(tmp_path):
    collection = tmp_path / "collection.tsv"
    collection.write_text("".join(f"{pid}\t{text}\n" for pid, text in PASSAGES.items()))
    queries = tmp_path / "queries.tsv"
    queries.write_text("".join(f"{qid}\t{text}\n" for qid, text in QUERIES.items()))
    call_command("import_collection", str(collection), name="tiny", verbosity=0)
    call_command("import_queries", str(queries), name="q", verbosity=0)
    for name, rankings in (("a", RUN_A), ("b", RUN_B), ("c", RUN_C)):
        call_command(
            "import_run", str(write_run(tmp_path / f"{name}.trec", rankings)), name=name, collection="tiny", verbosity=0
        )
    return tmp_path


#: Built once per module, each test in a savepoint of it (tests/support/kept_state.py).
_kept_world, world = kept("world", _world)

# Answers of three annotators: q1 n n f (majority n), q2 n n n, q3 n f m (disputed).
ANSWERS = {"ann-a": {"1": "n", "2": "n", "3": "n"}, "ann-b": {"1": "n", "2": "n", "3": "f"}}
ANSWERS["ann-c"] = {"1": "f", "2": "n", "3": "m"}


def _batch(folder):
    options = {"provider": "local", "assignments_per_query": 3, "queries_per_hit": 3, "reward": Decimal("0.05")}
    batch = annotation_services.create_batch(
        "sens", annotation_services.BatchSettings(**options), query_set=QuerySet.objects.get(name="q")
    )
    annotation_services.publish_batch(batch)
    for name, answers in ANSWERS.items():
        user = create_annotator(name, password="pw-secret-123")
        while (assignment := next_assignment(user, batch)) is not None:
            fields = {
                hq.field_name: answers[hq.batch_query.qid]
                for hq in assignment.hit.hit_queries.select_related("batch_query")
            }
            submit_local_assignment(assignment, fields)
    batch.refresh_from_db()
    return batch


_kept_batch, batch = kept("batch", _batch, after=("world",))


@pytest.fixture
def per_query_csv(django_capture_on_commit_callbacks):
    """The report's per-query CSV as the site hands it over: the first GET starts the job writing it
    (run here, at the commit), the next serves the file. ``download(client, name)`` -> its text."""
    from django.urls import reverse

    def download(client, name: str) -> str:
        url = reverse("metrics:report-per-query", args=[name])
        with django_capture_on_commit_callbacks(execute=True):
            started = client.get(url)
        assert started.status_code == 302 and started["Location"].startswith("/jobs/"), started.status_code
        response = client.get(url)
        assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
        return b"".join(response.streaming_content).decode()

    return download


@pytest.fixture
def report(world):
    """A report of runs a and c on query set q (cutoffs 1 and 2, baseline a): the pages' and API's tests
    read it; a module that needs another report defines its own."""
    from metrics import services
    from pooling.models import Run

    return services.build_report(
        "rep",
        QuerySet.objects.get(name="q"),
        [Run.objects.get(name="a"), Run.objects.get(name="c")],
        services.ReportSettings(cutoffs=(1, 2), bootstrap_samples=20),
        baseline=Run.objects.get(name="a"),
        bar=False,
    )
