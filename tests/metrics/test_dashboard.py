"""Progress at a glance: the researchers' home page lists running jobs, batches with answered/expected
assignments and what they cost so far, and the newest reports; annotators keep their welcome page."""

from decimal import Decimal

import pytest

from annotation import services as annotation
from annotation.models import Batch
from core.models import Job
from metrics import services
from platforms.inhouse.services.annotators import create_annotator
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from pooling.models import QuerySet, Run
from tests.browser_jobs import JOB_DEADLINE_MS


@pytest.fixture
def researcher(django_user_model):
    return django_user_model.objects.create_user("ana", password="pw-secret-123", is_staff=True)


@pytest.fixture
def dashboard(world):
    """A report, a running job, a finished one and a published local batch (3 queries: 1 HIT x 2 assignments), one answered."""
    services.build_report(
        "rep",
        QuerySet.objects.get(name="q"),
        [Run.objects.get(name="a"), Run.objects.get(name="c")],
        services.ReportSettings(cutoffs=(1, 2), bootstrap_samples=20),
        bar=False,
    )
    Job.objects.create(kind="pool", status=Job.Status.RUNNING, description="Pool p1", total=200, done=50)
    Job.objects.create(kind="report", status=Job.Status.DONE, description="Report old", total=1, done=1)
    batch = annotation.create_batch(
        "b1",
        annotation.BatchSettings(provider="local", assignments_per_query=2, queries_per_hit=3, reward=Decimal("0.05")),
        query_set=QuerySet.objects.get(name="q"),
    )
    annotation.publish_batch(batch)
    worker = create_annotator("ann-a", password="pw-secret-123")
    assignment = next_assignment(worker, batch)
    answers = {hq.field_name: "n" for hq in assignment.hit.hit_queries.all()}
    submit_local_assignment(assignment, answers)
    return Batch.objects.get(pk=batch.pk)


def test_dashboard_lists_a_running_job_a_batch_with_numbers_and_a_report(dashboard, researcher, client):
    client.force_login(researcher)
    response = client.get("/")
    html = response.content.decode()
    context = response.context
    # The running job, its numbers, and the live part polling while it runs.
    assert [job.description for job in context["active_jobs"]] == ["Pool p1"]
    assert "Pool p1" in html and "50 / 200 · 25%" in html
    assert 'hx-get="/home/live/" hx-trigger="every 3s"' in html
    # The batch: answered of expected assignments, and what that cost at the recorded price.
    (row,) = context["batch_rows"]
    assert (row["answered"], row["expected"]) == (1, dashboard.hits.count() * 2)
    price = Decimal(dashboard.cost["total"]) / dashboard.cost["assignments_total"]
    assert row["spent"] == price.quantize(Decimal("0.01")) and row["spent"] > 0
    assert f'<td class="num answered">1 / {row["expected"]}</td>' in html
    assert f'<td class="num spent">${row["spent"]}</td>' in html
    # The report, linked.
    assert 'href="/metrics/rep/">rep</a>' in html
    # The pooling overview is still there.
    assert 'id="pools"' in html and "tiny" in html


def test_dashboard_live_part_is_for_researchers_and_stops_polling_when_nothing_moves(dashboard, researcher, client):
    client.force_login(researcher)
    assert "hx-trigger" in client.get("/home/live/").content.decode()
    Job.objects.update(status=Job.Status.DONE)
    Batch.objects.update(status=Batch.Status.COMPLETED)
    html = client.get("/home/live/").content.decode()
    assert "hx-trigger" not in html and "No job is running." not in html  # finished jobs stay a while
    assert "Pool p1" in html and "Done" in html

    client.logout()
    assert client.get("/home/live/").status_code == 302
    client.force_login(create_annotator("ann-z", password="pw-secret-123"))
    assert client.get("/home/live/").status_code == 403


def shown(html: str) -> str:
    """What a person reads on a page and where its links and forms lead: the text outside scripts and
    styles, and the ``href`` of links and ``action`` of forms. Not the other attributes, where the
    random CSRF tokens (``csrfmiddlewaretoken``, ``X-CSRFToken``), nonces and hashed asset names live:
    random text may spell any short name, so a test that reads the raw HTML fails now and then."""
    from html.parser import HTMLParser

    class Reader(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.parts: list[str] = []
            self.hidden = 0

        def handle_starttag(self, tag, attrs):
            if tag in ("script", "style", "template"):
                self.hidden += 1
            wanted = {"a": "href", "form": "action"}.get(tag)
            self.parts += [value or "" for name, value in attrs if name == wanted]

        def handle_endtag(self, tag):
            if tag in ("script", "style", "template") and self.hidden:
                self.hidden -= 1

        def handle_data(self, data):
            if not self.hidden:
                self.parts.append(data)

    reader = Reader()
    reader.feed(html)
    reader.close()
    return "\n".join(reader.parts)


def test_shown_reads_text_and_links_never_tokens():
    page = (
        '<form action="/go/"><input type="hidden" name="csrfmiddlewaretoken" value="xb1repx">'
        '<a href="/annotation/next/">Go <b>on</b></a></form><script>var b1 = "rep";</script>'
        '<body hx-headers=\'{"X-CSRFToken": "rep-b1"}\'>Hello</body>'
    )
    assert shown(page).split("\n") == ["/go/", "/annotation/next/", "Go ", "on", "Hello"]


def test_annotators_keep_their_own_home(dashboard, client):
    client.force_login(create_annotator("ann-z", password="pw-secret-123"))
    html = client.get("/").content.decode()
    assert "csrfmiddlewaretoken" in html  # the page does carry random tokens; they are not read below
    page = shown(html)
    assert "Go to your next task" in page
    assert "Pool p1" not in page and "rep" not in page and "b1" not in page


def test_batch_list_shows_answered_of_expected_as_numbers(dashboard, researcher, client):
    client.force_login(researcher)
    expected = dashboard.hits.count() * 2
    for url in ("/annotation/", "/annotation/live/"):
        html = client.get(url).content.decode()
        assert f'<span class="answered" id="answered-b1">1 / {expected}</span>' in html


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_dashboard_at_1280_and_390_px_light_and_dark(dashboard, researcher, page, login):
    login(researcher.username)
    for width, height in ((1280, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            page.goto("/")
            assert page.get_by_role("heading", name="Jobs", exact=True).is_visible()
            assert page.locator("#dashboard-batches td.answered").inner_text() == "1 / 2"
            page.screenshot(path=f"/tmp/ux/dashboard-{width}-{scheme}.png", full_page=True)
            assert page.evaluate("document.documentElement.scrollWidth") <= width
    # The live part swaps in the job's new progress without a reload.
    Job.objects.filter(description="Pool p1").update(done=150)
    page.locator(".job-numbers", has_text="150 / 200").wait_for(timeout=JOB_DEADLINE_MS)


def test_imported_qrels_are_listed_on_the_dashboard(world, researcher, client):
    from django.core.management import call_command

    client.force_login(researcher)
    assert "None yet: effectiveness" in client.get("/").content.decode()
    qrels = world / "qrels.txt"
    qrels.write_text("1 0 d1 1\n1 0 d3 0\n2 0 d3 2\n")
    call_command("import_qrels", str(qrels), name="tiny-qrels", queries="q", collection="tiny", verbosity=0)
    html = client.get("/").content.decode()
    table = html.split('id="dashboard-qrels"')[1].split("</table>")[0]
    # Name, query set, collection, queries, judgments, relevant.
    assert "<td>tiny-qrels</td><td>q</td><td>tiny</td>" in table
    assert '<td class="num">2</td><td class="num">3</td><td class="num">2</td>' in table
