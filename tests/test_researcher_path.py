"""The researcher's whole path on the site, in a real browser, from an empty site (issue 45's walk).

Upload a collection, queries and two runs; pool them; create a batch from the pool with
its live cost estimate; publish it to in-house annotators; add the team on the Team page and
restrict the batch to it; the annotators log in (one at 1280 px, one on a phone) and answer,
one corrects a slip in their last HIT within the window and the batch's figures follow;
review agreement; settle the disputed query; download the export; build a report from the
exported query set; set the Prolific connection on the Connections page and run a Prolific
study against a Prolific-compatible server: a participant arrives from Prolific and answers,
another returns their place, and the batch page shows both submissions after a sync. The
researcher works at 1280 px; every researcher page is checked for sideways scroll at 1280 and
at 390 px on the spot (the viewport resized on the same page, the path walked once), and
screenshots of the main steps are taken (written to ``docs/screenshots/``, shown in README,
when ``UPDATE_SCREENSHOTS=1``).

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
from playwright.sync_api import expect

from annotation.models import Batch, Hit, Judgment
from core.connection_kinds import hint
from core.sealing import new_key
from metrics.models import Report
from platforms.prolific.models import ProlificSubmission
from pooling.models import Collection, Pool, QuerySet, Run
from tests.browser_jobs import ACTION_MS, open_the_result, wait_for_job
from tests.platforms.prolific.fake_server import TOKEN, FakeProlific, hexid, serve

#: README's screenshots are refreshed only on request (``UPDATE_SCREENSHOTS=1``): they hold
#: times and pseudonyms, so every run would otherwise change the committed files.
SCREENSHOTS = (
    FilePath(__file__).resolve().parent.parent / "docs" / "screenshots"
    if os.environ.get("UPDATE_SCREENSHOTS") == "1"
    else FilePath(tempfile.gettempdir()) / "genderbias-screenshots"
)
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}
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
#: The screen each annotator works on: alice at a desk, bob on a phone.
SCREENS = {"alice": DESKTOP, "bob": PHONE}
CODES = {"Non-gendered": "n", "Female": "f", "Male": "m", "Other or multiple genders": "o"}
#: Bob's slip on his last HIT (corrected in ``correct_a_slip``): its first query answered "Female".
SLIP = "Female"


@dataclass
class Path:
    """What the steps share: the browser page, the files, and the pages visited by the researcher."""

    page: object
    browser: object
    live_url: str
    files: dict[str, FilePath]
    prolific: FakeProlific
    researcher_pages: list[str] = field(default_factory=list)
    fitted: set[str] = field(default_factory=set)  #: the researcher pages checked at both widths
    passwords: dict[str, str] = field(default_factory=dict)  #: the team's, as the Team page showed them
    annotators: dict[str, object] = field(default_factory=dict)  #: each annotator's last browser page

    def visit(self, url: str) -> None:
        self.page.goto(url)
        self.fits()

    def park(self) -> None:
        """Leave the researcher's page for a blank one while others write: the batch page and the
        dashboard poll every few seconds, and the test database (SQLite in memory) takes no reads
        beside a writer."""
        self.page.goto("about:blank")

    def fits(self) -> None:
        """The researcher page now open has no sideways scroll at 1280 nor at 390 px, and Log out in
        view at both: the viewport is resized on the page (no second load), then set back."""
        self.page.wait_for_load_state()
        url = self.page.url
        self.researcher_pages.append(url)
        for screen in (DESKTOP, PHONE):
            self.page.set_viewport_size(screen)
            width = self.page.evaluate("document.scrollingElement.scrollWidth")
            assert width <= screen["width"], f"{url} scrolls sideways at {screen['width']} px ({width} px wide)"
            assert self.page.get_by_role("button", name="Log out").is_visible(), f"{url}: Log out off-screen"
        self.page.set_viewport_size(DESKTOP)
        self.fitted.add(url.removeprefix(self.live_url))

    def shot(self, name: str) -> None:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))

    def follow_job(self) -> None:
        """On a job page: wait for the job to end (the page polls itself) and open its result."""
        open_the_result(self.page)
        self.page.wait_for_load_state()


def _import(path: Path, kind: str, name: str, file: FilePath, **fields: str) -> None:
    path.visit("/pooling/import/")
    path.page.get_by_role(
        "link", name={"collection": "Import a collection", "queries": "Import a query set", "run": "Import a run"}[kind]
    ).click()
    path.fits()
    path.page.get_by_label("Name").fill(name)
    path.page.get_by_label("File").set_input_files(str(file))
    for label, value in fields.items():
        path.page.get_by_label(label).select_option(label=value)
    if kind == "collection":
        path.shot("1-import")
    path.page.get_by_role("button", name="Import").click()
    wait_for_job(path.page)
    path.researcher_pages.append(path.page.url)  # the job's page, checked at the end (it may be reloading)
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
    path.fits()
    path.shot("2-pool")


def create_batch(path: Path) -> None:
    page = path.page
    page.get_by_role("link", name="Annotate this pool").click()
    path.fits()
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
    path.fits()
    page.get_by_role("button", name="Publish 2 HITs").click()
    path.follow_job()
    assert page.locator("#batch-status").inner_text() == "published"


def add_the_team(path: Path) -> None:
    """The in-house annotators added on the Team page (a password shown once), the batch restricted to them."""
    page = path.page
    for name in ("alice", "bob"):
        path.visit("/annotation/team/")
        page.get_by_label("Username").fill(name)
        page.get_by_label("Generated password").check()
        with page.expect_navigation():
            page.get_by_role("button", name="Add annotator").click()
        path.passwords[name] = page.locator("#member-password").inner_text()
        assert page.locator("#member-username").inner_text() == name and len(path.passwords[name]) >= 20
        path.fits()
    path.visit("/annotation/team/")
    assert page.get_by_role("link", name="alice").is_visible() and page.get_by_role("link", name="bob").is_visible()
    path.shot("3b-team")
    path.visit("/annotation/batches/sigir-local/")
    team_form = page.locator("#team-form")
    for name in ("alice", "bob"):
        team_form.get_by_label(name, exact=True).check()
    team_form.get_by_role("button", name="Save team").click()
    assert "restricted to its team: alice, bob" in page.locator(".messages").inner_text()
    path.park()


def annotators_answer(path: Path) -> None:
    """Alice at a desk, bob on a phone, answer both HITs; bob slips on the first query of his last HIT."""
    for name, screen in SCREENS.items():
        context = path.browser.new_context(base_url=path.live_url, viewport=screen)
        annotator = path.annotators[name] = context.new_page()
        annotator.set_default_timeout(ACTION_MS)
        annotator.goto("/accounts/login/")
        annotator.get_by_label("Username").fill(name)
        annotator.get_by_label("Password").fill(path.passwords[name])
        annotator.get_by_role("button", name="Log in").click()
        annotator.get_by_role("link", name="Next task", exact=True).click()
        for done in range(2):
            # The HIT page of this round is in (the link's and the last submit's navigation ended): its count says so.
            submitted = f"You have submitted {done} HIT{'' if done == 1 else 's'}"
            expect(annotator.locator("#my-count")).to_have_text(submitted)
            legends = annotator.locator("fieldset.query legend")
            if screen is PHONE or done:  # a desk's first HIT opens with the instructions in full
                first = annotator.locator("fieldset.query").first.bounding_box()
                assert first["y"] + first["height"] <= screen["height"], f"first query below the fold for {name}"
            assert annotator.evaluate("document.scrollingElement.scrollWidth") <= screen["width"]
            # Where they stand in the batch (2 HITs, each answered by both): "HIT n of N · k left".
            assert annotator.locator("#hit-progress").inner_text() == (
                f"HIT {done + 1} of 2 in sigir-local · {1 - done} left after this one"
            )
            if name == "bob" and done == 0:
                annotator.screenshot(path=str(SCREENSHOTS / "4-annotator-phone.png"))
            for i in range(legends.count()):
                answer = ANSWERS[name][legends.nth(i).inner_text()]
                if name == "bob" and done == 1 and i == 0:
                    assert answer != SLIP
                    answer = SLIP
                annotator.locator("fieldset.query").nth(i).get_by_label(answer, exact=True).check()
            annotator.get_by_role("button", name="Submit").click()
            confirmation = annotator.get_by_role("status").first.inner_text()
            assert f"You have submitted {done + 1} HIT" in confirmation
        assert "No more HITs" in annotator.content()
        for url in ("/", "/annotation/"):  # the annotator's other pages fit their screen too
            annotator.goto(url)
            assert annotator.evaluate("document.scrollingElement.scrollWidth") <= screen["width"]
        if name != "bob":  # bob stays on his home page, to correct his last HIT
            annotator.context.close()
    assert set(Hit.objects.filter(batch__name="sigir-local").values_list("status", flat=True)) == {"complete"}


def correct_a_slip(path: Path) -> None:
    """Bob corrects his last HIT from his home page within the window; the batch's agreement follows at once."""
    page, bob = path.page, path.annotators["bob"]
    path.visit("/annotation/batches/sigir-local/")
    # With the slip, 6 labels (F 2, O 1, N 2, M 1 or F 2, O 1, N 1, M 2): two disagreeing pairs,
    # D_o = 4/6, D_e = 1 - (2*1 + 2*1)/(6*5) = 26/30, alpha = 1 - (2/3)/(26/30) = 3/13.
    assert page.locator("#alpha-so-far").inner_text() == f"{1 - (4 / 6) / (26 / 30):.3f}" == "0.231"
    path.park()
    with bob.expect_navigation():
        bob.get_by_role("link", name="Correct my last HIT").click()  # bob is on his home page
    slipped = bob.locator("fieldset.query").first
    query = slipped.locator("legend").inner_text()
    assert slipped.get_by_label(SLIP, exact=True).is_checked()  # the answers as he sent them
    assert bob.evaluate("document.scrollingElement.scrollWidth") <= PHONE["width"]
    slipped.get_by_label(ANSWERS["bob"][query], exact=True).check()
    with bob.expect_navigation():
        bob.get_by_role("button", name="Submit").click()
    assert "Your answers to HIT 2 of sigir-local were corrected." in bob.get_by_role("status").first.inner_text()
    stored = Judgment.objects.get(assignment__worker__identity__user__username="bob", batch_query__text=query)
    assert stored.label == CODES[ANSWERS["bob"][query]]
    bob.context.close()
    # review_agreement reads the batch's figures again: alpha 0.615 as without the slip.


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
    path.fits()
    path.researcher_pages += ["/annotation/batches/sigir-local/queries/2/", "/annotation/batches/sigir-local/escalate/"]
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
    path.fits()
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
    path.fits()
    path.shot("6-report")


def prolific_study(path: Path) -> None:
    """The Prolific connection set on the site, a Prolific batch of the pool published, a participant
    arriving from Prolific and answering, another returning their place; the batch page lists both."""
    page, prolific = path.page, path.prolific
    path.visit("/connections/")
    card = page.locator("#connection-prolific")
    card.get_by_label("API address").fill(f"{prolific.base}/api/v1/")
    card.locator("#id_prolific-token").fill(TOKEN)
    card.get_by_label("Project id").fill("project-1")
    card.get_by_role("button", name="Save", exact=True).click()
    page.wait_for_load_state()
    assert TOKEN not in page.content()  # never shown again in full
    assert hint(TOKEN) in page.locator("#connection-prolific").inner_text()  # saved: shown by its hint alone
    path.fits()  # (the publishing below is the connection's test: tests/core tests its button)

    path.visit(f"/pooling/pools/{Pool.objects.get().name}/")
    page.get_by_role("link", name="Annotate this pool").click()
    page.get_by_label("Name").fill("sigir-prolific")
    page.get_by_label("Provider").select_option("prolific")
    page.get_by_label("Assignments per query").fill("2")
    page.get_by_label("Queries per hit").fill("3")
    page.get_by_label("Reward").fill("0.90")
    page.locator("#estimate-total").filter(has_text="$2.40").wait_for()  # 2 places x ($0.90 + Prolific's 33.3%)
    path.fits()
    page.get_by_role("button", name="Create the batch").click()
    page.get_by_role("button", name="Publish 1 HITs").click()
    path.follow_job()
    assert page.locator("#batch-status").inner_text() == "published"
    study = Batch.objects.get(name="sigir-prolific").hit_type_id
    assert prolific.studies[study]["status"] == "ACTIVE"
    path.park()

    session, study_url = prolific.start(study, hexid("WALKER"))
    context = path.browser.new_context(viewport=PHONE)
    participant = context.new_page()
    participant.goto(study_url)  # no account: the link from Prolific is enough
    for legend in participant.locator("fieldset.query legend").all_inner_texts():
        group = participant.get_by_role("group", name=legend, exact=True)
        group.get_by_label(ANSWERS["alice"][legend], exact=True).check()
    assert participant.evaluate("document.scrollingElement.scrollWidth") <= PHONE["width"]
    with participant.expect_navigation():
        participant.get_by_role("button", name="Submit").click()
    assert participant.url.startswith(f"{prolific.base}/submissions/complete?cc=")
    context.close()
    prolific.set_status(session, "AWAITING REVIEW")  # as Prolific marks a completed submission
    returned, _ = prolific.start(study, hexid("RETURNER"))
    prolific.set_status(returned, "RETURNED")

    path.visit("/annotation/batches/sigir-prolific/")
    page.get_by_role("button", name="Sync and review").click()
    path.follow_job()
    assert ProlificSubmission.objects.filter(batch__name="sigir-prolific").count() == 2
    rows = page.locator("#prolific-submissions-table tbody tr")
    statuses = sorted(rows.locator("td:nth-child(2)").all_inner_texts())
    assert statuses == ["awaiting review", "returned"]
    assert "2 submissions" in page.locator("#prolific-submissions").inner_text()
    path.fits()
    path.shot("7-prolific")


#: The path in order; insert a step where it belongs.
STEPS: list[Callable[[Path], None]] = [
    upload_inputs,
    build_pool,
    create_batch,
    publish,
    add_the_team,
    annotators_answer,
    correct_a_slip,
    review_agreement,
    settle_disputed_query,
    download_export,
    build_report,
    prolific_study,
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


@pytest.fixture
def prolific(settings, live_server):
    """A Prolific-compatible server (tests/platforms/prolific/fake_server.py); the researcher connects the site to it
    on the Connections page, so only what is no connection field is set here."""
    fake = FakeProlific()
    url, server = serve(fake)
    settings.CONNECTIONS_KEY = new_key()
    settings.PROLIFIC_COMPLETION_URL = f"{url}/submissions/complete?cc="
    settings.SITE_URL = live_server.url
    yield fake
    server.shutdown()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_the_researchers_path_from_an_empty_site(
    page, browser, live_server, login, django_user_model, input_files, prolific
):
    assert not Collection.objects.exists() and not Pool.objects.exists()
    django_user_model.objects.create_user("researcher", password=PASSWORD, is_staff=True)
    page.set_viewport_size(DESKTOP)
    login("researcher")
    path = Path(page, browser, live_server.url, input_files, prolific)
    for url in ("/", "/annotation/", "/metrics/"):
        path.visit(url)
    for step in STEPS:
        step(path)

    # The pages the path named without opening them, at both widths too (the others were checked on the spot).
    for url in dict.fromkeys(path.researcher_pages):
        if url.removeprefix(path.live_url) not in path.fitted:
            page.goto(url)
            path.fits()

    # Dark colours when the system asks for them.
    page.emulate_media(color_scheme="dark")
    page.goto("/")
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(20, 24, 29)"
