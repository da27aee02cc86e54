"""The researcher's whole path on the site, in a real browser, from an empty site.

Upload a collection, queries and two runs; pool them; create a batch from the pool with
its live cost estimate; publish it to in-house annotators; annotators log in (on a
phone-sized screen) and answer; review agreement; settle the disputed query; download the
export; build a report
from the exported query set. Every researcher page is checked at 390 px wide (no sideways
scroll), and screenshots of the main steps are taken (written to ``docs/screenshots/``,
shown in README, when ``UPDATE_SCREENSHOTS=1``).

The path is a list of steps sharing one :class:`Path` state, so a step can be inserted
where it belongs.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path as FilePath

import pytest

from annotation import services as annotation_services
from annotation.models import Batch, Hit
from metrics.models import Report
from pooling.models import Collection, Pool, QuerySet, Run

#: README's screenshots are refreshed only on request (``UPDATE_SCREENSHOTS=1``): they hold
#: times and pseudonyms, so every run would otherwise change the committed files.
SCREENSHOTS = (
    FilePath(__file__).resolve().parent.parent / "docs" / "screenshots"
    if os.environ.get("UPDATE_SCREENSHOTS") == "1"
    else FilePath(tempfile.gettempdir()) / "genderbias-screenshots"
)
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 960, "height": 600}
PASSWORD = "pw-secret-123"

PASSAGES = {
    "d1": "She and her sister",
    "d2": "He met his father",
    "d3": "nothing gendered here",
    "d4": "the man and the woman",
}
QUERIES = {"1": "who is she", "2": "what is a synapse", "3": "who is he"}
RUNS = {
    "bm25": {"1": ["d1", "d3"], "2": ["d3", "d4"], "3": ["d2", "d1"]},
    "bert": {"1": ["d3", "d1"], "2": ["d2"], "3": ["d4", "d3"]},
}
#: What the annotators answer per query: they disagree on "who is she", which is then
#: disputed (set aside) until the researcher settles it (``settle_disputed_query``).
ANSWERS = {
    "alice": {"who is she": "Female", "what is a synapse": "Non-gendered", "who is he": "Male"},
    "bob": {"who is she": "Other or multiple genders", "what is a synapse": "Non-gendered", "who is he": "Male"},
}


@dataclass
class Path:
    """What the steps share: the browser page, the files, and the pages visited by the researcher."""

    page: object
    browser: object
    live_url: str
    files: dict[str, FilePath]
    researcher_pages: list[str] = field(default_factory=list)

    def visit(self, url: str) -> None:
        self.page.goto(url)
        self.researcher_pages.append(url)

    def shot(self, name: str) -> None:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))

    def follow_job(self) -> None:
        """On a job page: wait for the job to end (the page polls itself) and open its result."""
        self.page.get_by_role("link", name="Open the result").click()
        self.page.wait_for_load_state()


def _import(path: Path, kind: str, name: str, file: FilePath, **fields: str) -> None:
    path.visit("/pooling/import/")
    path.page.get_by_role(
        "link", name={"collection": "Import a collection", "queries": "Import a query set", "run": "Import a run"}[kind]
    ).click()
    path.researcher_pages.append(path.page.url)
    path.page.get_by_label("Name").fill(name)
    path.page.get_by_label("File").set_input_files(str(file))
    for label, value in fields.items():
        path.page.get_by_label(label).select_option(label=value)
    if kind == "collection":
        path.shot("1-import")
    path.page.get_by_role("button", name="Import").click()
    assert path.page.locator("#status").inner_text() == "done"
    path.researcher_pages.append(path.page.url)
    path.follow_job()


def upload_inputs(path: Path) -> None:
    _import(path, "collection", "tiny", path.files["collection"])
    _import(path, "queries", "dev", path.files["queries"])
    for name in RUNS:
        _import(path, "run", name, path.files[name], Collection="tiny")
    assert Collection.objects.get(name="tiny").passages == 4
    assert QuerySet.objects.get(name="dev").queries.count() == 3
    assert set(Run.objects.values_list("name", flat=True)) == set(RUNS)


def build_pool(path: Path) -> None:
    path.visit("/pooling/pools/new/")
    page = path.page
    page.get_by_label("Name").fill("sigir")
    page.get_by_label("Query set").select_option(label="dev")
    for name in RUNS:
        page.get_by_label(name, exact=True).check()
    page.get_by_label("Rank cutoff").fill("2")
    page.get_by_label("Depth").fill("5")
    page.get_by_role("button", name="Build").click()
    path.follow_job()
    assert page.locator("#pool-size").inner_text() == "3"
    path.researcher_pages.append(page.url)
    path.shot("2-pool")


def create_batch(path: Path) -> None:
    page = path.page
    page.get_by_role("link", name="Annotate this pool").click()
    path.researcher_pages.append(page.url)
    page.get_by_label("Name").fill("sigir-local")
    page.get_by_label("Assignments per query").fill("2")
    page.get_by_label("Queries per hit").fill("2")
    page.get_by_label("Reward").fill("0.10")
    # 3 queries, 2 per HIT: 2 HITs x 2 assignments = 4 x $0.10 (in-house: no fee) = $0.40, live.
    page.locator("#estimate-total").filter(has_text="$0.40").wait_for()
    assert "2 HITs" in page.locator("#estimate-total").inner_text()
    page.get_by_label("Assignments per query").fill("3")
    page.locator("#estimate-total").filter(has_text="$0.60").wait_for()
    # On MTurk the 20% fee is added: 6 x ($0.10 + $0.02) = $0.72.
    page.get_by_label("Provider").select_option("mturk")
    page.locator("#estimate-total").filter(has_text="$0.72").wait_for()
    page.get_by_label("Provider").select_option("local")
    page.get_by_label("Assignments per query").fill("2")
    page.locator("#estimate-total").filter(has_text="$0.40").wait_for()
    page.get_by_role("button", name="Create the batch").scroll_into_view_if_needed()
    path.shot("3-new-batch")
    page.get_by_role("button", name="Create the batch").click()
    assert Batch.objects.get(name="sigir-local").cost["total"] == "0.40"


def publish(path: Path) -> None:
    page = path.page
    path.researcher_pages.append(page.url)
    page.get_by_role("button", name="Publish 2 HITs").click()
    path.follow_job()
    assert page.locator("#batch-status").inner_text() == "published"
    for name in ("alice", "bob"):
        annotation_services.create_annotator(name, password=PASSWORD)
    path.visit("/annotation/team/")
    assert page.get_by_role("link", name="alice").is_visible() and page.get_by_role("link", name="bob").is_visible()
    path.shot("3b-team")
    # The published batch's page polls every 2 s; the test database (SQLite in memory) does
    # not take concurrent writers, so the researcher waits elsewhere while annotators answer.
    page.goto("/")


def annotators_answer(path: Path) -> None:
    for name in ("alice", "bob"):
        context = path.browser.new_context(base_url=path.live_url, viewport=PHONE)
        phone = context.new_page()
        phone.set_default_timeout(10_000)
        phone.goto("/accounts/login/")
        phone.get_by_label("Username").fill(name)
        phone.get_by_label("Password").fill(PASSWORD)
        phone.get_by_role("button", name="Log in").click()
        phone.get_by_role("link", name="Next task", exact=True).click()
        for done in range(2):
            legends = phone.locator("fieldset.query legend")
            first = phone.locator("fieldset.query").first.bounding_box()
            assert first["y"] + first["height"] <= PHONE["height"], "first query below the fold on a phone"
            assert phone.evaluate("document.scrollingElement.scrollWidth") <= PHONE["width"]
            assert phone.locator("#my-count").inner_text() == f"You have submitted {done} HIT{'' if done == 1 else 's'}"
            # Where they stand in the batch (2 HITs, each answered by both): "HIT n of N · k left".
            assert phone.locator("#hit-progress").inner_text() == (
                f"HIT {done + 1} of 2 in sigir-local · {1 - done} left after this one"
            )
            if name == "alice" and done == 0:
                phone.screenshot(path=str(SCREENSHOTS / "4-annotator-phone.png"))
            for i in range(legends.count()):
                fieldset = phone.locator("fieldset.query").nth(i)
                fieldset.get_by_label(ANSWERS[name][legends.nth(i).inner_text()], exact=True).check()
            phone.get_by_role("button", name="Submit").click()
            confirmation = phone.get_by_role("status").first.inner_text()
            assert f"You have submitted {done + 1} HIT" in confirmation
        assert "No more HITs" in phone.content()
        for url in ("/", "/annotation/"):  # the annotator's other pages fit the phone too
            phone.goto(url)
            assert phone.evaluate("document.scrollingElement.scrollWidth") <= PHONE["width"]
        context.close()
    assert set(Hit.objects.filter(batch__name="sigir-local").values_list("status", flat=True)) == {"complete"}


def review_agreement(path: Path) -> None:
    page = path.page
    path.visit("/")  # the dashboard: the batch with its answered/total
    assert "4 / 4" in page.locator("main").inner_text()
    path.shot("4b-dashboard")
    path.visit("/annotation/batches/sigir-local/")
    assert page.locator("#answered").inner_text() == "4 / 4"
    # Krippendorff's nominal alpha by hand: 6 labels (N 2, F 1, M 2, O 1), one disagreeing
    # pair (F vs O): D_o = 2/6, D_e = 1 - (2*1 + 2*1)/(6*5) = 26/30, alpha = 1 - (1/3)/(26/30).
    assert page.locator("#alpha-so-far").inner_text() == f"{1 - (1 / 3) / (26 / 30):.3f}" == "0.615"
    page.get_by_label("approve everything").check()
    page.get_by_role("button", name="Sync and review").click()
    path.follow_job()
    assert page.locator("#batch-status").inner_text() == "completed"
    assert set(page.locator("#hits tbody tr td:nth-child(3)").all_inner_texts()) == {"All assignments in"}
    page.get_by_role("link", name="Agreement and disputed queries").click()
    path.researcher_pages += [
        page.url,
        "/annotation/batches/sigir-local/queries/2/",
        "/annotation/batches/sigir-local/escalate/",
    ]
    assert page.locator("#alpha").inner_text() == "0.615"
    assert page.locator("#set-aside-count").inner_text() == "1"
    assert page.get_by_role("link", name="1", exact=True).first.is_visible()  # the disputed query
    path.shot("5-agreement")
    path.visit("/annotation/batches/sigir-local/review/")  # the review queue walks the disputed queries
    assert "who is she" in page.locator("main").inner_text()
    path.shot("5a-review-queue")
    path.visit("/annotation/batches/sigir-local/agreement/")


def settle_disputed_query(path: Path) -> None:
    """The researcher opens the disputed query, reads its votes and settles it with a reason."""
    page = path.page
    page.get_by_role("link", name="1", exact=True).first.click()
    path.researcher_pages.append(page.url)
    assert page.locator("#majority").inner_text() == "disputed"
    page.get_by_role("radio", name="Female", exact=True).check()
    page.get_by_label("Reason").fill("asks about a woman")
    with page.expect_navigation():
        page.get_by_role("button", name="Adjudicate").click()
    assert "Query 1 adjudicated as Female." in page.locator(".messages").inner_text()
    assert "asks about a woman" in page.locator("#adjudication").inner_text()
    path.shot("5b-adjudication")


def download_export(path: Path) -> None:
    page = path.page
    path.visit("/annotation/batches/sigir-local/")
    page.get_by_label("Category").select_option("non-gendered")
    page.get_by_label("Format").select_option("tsv")
    page.get_by_label("Also register as query set").fill("nongendered")
    with page.expect_download() as download:
        page.get_by_role("button", name="Export and download").click()
    assert download.value.suggested_filename == "sigir-local-non-gendered.tsv"
    assert download.value.path().read_text(encoding="utf-8") == "2\twhat is a synapse\n"
    page.goto("/annotation/batches/sigir-local/")
    with page.expect_download() as card:
        page.get_by_role("link", name="dataset card").click()
    card_text = card.value.path().read_text(encoding="utf-8")
    assert "Non-gendered" in card_text
    with page.expect_download() as female:  # the settled query is exported with its ruling
        page.get_by_label("Category").select_option("female")
        page.get_by_label("Format").select_option("jsonl")
        page.get_by_label("Also register as query set").fill("")
        page.get_by_role("button", name="Export and download").click()
    rows = [json.loads(line) for line in female.value.path().read_text(encoding="utf-8").splitlines()]
    assert [(r["qid"], r["label"], r["adjudicated"]) for r in rows] == [("1", "f", True)]


def build_report(path: Path) -> None:
    page = path.page
    path.visit("/metrics/")
    page.get_by_label("Name").fill("nongendered-bias")
    page.get_by_label("Query set").select_option(label="nongendered")
    for name in RUNS:
        page.get_by_label(name, exact=True).check()
    page.get_by_label("Cutoffs").fill("1,2")
    page.get_by_role("button", name="Build report").click()
    path.follow_job()
    assert Report.objects.get(name="nongendered-bias").query_set.name == "nongendered"
    path.researcher_pages.append(page.url)
    path.shot("6-report")


#: The path in order; insert a step where it belongs.
STEPS: list[Callable[[Path], None]] = [
    upload_inputs,
    build_pool,
    create_batch,
    publish,
    annotators_answer,
    review_agreement,
    settle_disputed_query,
    download_export,
    build_report,
]


@pytest.fixture
def input_files(tmp_path) -> dict[str, FilePath]:
    files = {"collection": tmp_path / "collection.tsv.gz", "queries": tmp_path / "queries.tsv"}
    files["collection"].write_bytes(gzip.compress("".join(f"{p}\t{t}\n" for p, t in PASSAGES.items()).encode()))
    files["queries"].write_text("".join(f"{q}\t{t}\n" for q, t in QUERIES.items()))
    for name, rankings in RUNS.items():
        files[name] = tmp_path / f"{name}.trec"
        files[name].write_text(
            "".join(
                f"{qid} Q0 {doc} {rank} {10 - rank} {name}\n"
                for qid, docs in rankings.items()
                for rank, doc in enumerate(docs, start=1)
            )
        )
    return files


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_the_researchers_path_from_an_empty_site(page, browser, live_server, login, django_user_model, input_files):
    assert not Collection.objects.exists() and not Pool.objects.exists()
    django_user_model.objects.create_user("researcher", password=PASSWORD, is_staff=True)
    page.set_viewport_size(DESKTOP)
    login("researcher")
    path = Path(page, browser, live_server.url, input_files, researcher_pages=["/", "/annotation/", "/metrics/"])
    for step in STEPS:
        step(path)

    # Every researcher page the path went through fits a 390-px-wide screen.
    page.set_viewport_size(PHONE)
    for url in dict.fromkeys(path.researcher_pages):
        page.goto(url)
        width = page.evaluate("document.scrollingElement.scrollWidth")
        assert width <= PHONE["width"], f"{url} scrolls sideways at 390 px ({width} px wide)"
        assert page.get_by_role("button", name="Log out").is_visible(), f"{url}: Log out is off-screen"

    # Dark colours when the system asks for them.
    page.emulate_media(color_scheme="dark")
    page.goto("/")
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(20, 24, 29)"
