"""Machine pre-labelling on the site: the machine-labels page, the calibration report and routing.

The whole path as a researcher walks it: pre-label with ``rules`` (a job), draw the blind
sample (published), let simulated annotators answer it, read the report, preview the
routing (the numbers are ``plan_routing``'s) and confirm it. Plus: researchers only on
every page, bad input is a form error (400) naming the field, and the sample's HIT page
shows no machine label.
"""

from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation import services
from annotation.machine.selectors import calibration_batch
from annotation.machine.services.calibration import create_calibration_sample
from annotation.machine.services.prelabels import prelabel_batch
from annotation.machine.services.routing import plan_routing
from annotation.models import Assignment, Batch, PreLabel
from core.models import Job
from platforms.inhouse.services.annotators import create_annotator
from platforms.inhouse.services.simulation import simulate_local_annotations
from pooling.models import QuerySet
from pooling.services import create_query_set

#: Queries the rules label with various confidences and the simulated crowd answers by its word lists.
TEXTS = [
    "what is a synapse", "how to boil an egg", "symptoms of the flu", "capital of france", "how tall is everest",
    "best pizza dough recipe", "what is photosynthesis", "how far is the moon", "why is the sky blue",
    "how to tie a tie", "what age do girls start puberty", "how tall is the average woman", "queen of england",
    "what does a midwife do", "mother of pearl meaning", "what age do men go bald", "who was the first king of france",
    "what does a prostate do", "father of the bride cast", "how tall is the average man", "boys and girls club",
    "do boys or girls learn faster", "husband and wife taxes", "average height of men and women",
    "brother and sister names", "jennifer aniston age", "john lennon songs", "mary shelley books",
    "what is a carburetor", "how many bones in the body",
]  # fmt: skip


def _queries(n: int = 150) -> list[tuple[str, str]]:
    return [(f"q{i:03d}", f"{TEXTS[i % len(TEXTS)]} {i // len(TEXTS) or ''}".strip()) for i in range(n)]


@pytest.fixture
def machine_batch(db) -> Batch:
    """A draft local batch of 150 queries, 3 annotators per query, 10 queries per HIT."""
    query_set = create_query_set("mq", _queries(), origin=QuerySet.Origin.IMPORTED)
    settings = services.BatchSettings(
        provider="local", assignments_per_query=3, queries_per_hit=10, reward=Decimal("0.05")
    )
    return services.create_batch("mb", settings, query_set=query_set)


@pytest.fixture
def sampled(machine_batch):
    """``machine_batch`` pre-labelled by the rules, with a published blind sample of 60 queries."""
    prelabel_batch(machine_batch, "rules")
    child = create_calibration_sample(machine_batch, 60, seed=1)
    services.publish_batch(child)
    return machine_batch


def answer_until_in(batch: Batch, *, annotators: int = 4, accuracy: float = 0.85, seed: int = 0) -> None:
    """The sample of ``batch`` answered by simulated annotators, synced and escalated round by round until
    no sample query awaits votes (routing waits for that: issue 58)."""
    from annotation.crowd.services.sync import sync_batch
    from annotation.machine.selectors import read_sample
    from annotation.machine.services.routing import reference_state

    child = calibration_batch(batch)
    simulate_local_annotations(child, annotators=annotators, accuracy=accuracy, seed=seed)
    for round_ in range(10):
        if not reference_state(read_sample(batch))["pending"]:
            return
        sync_batch(child)  # escalates up to the cap (7 votes): as many annotators answer
        simulate_local_annotations(child, annotators=max(annotators, 7), accuracy=accuracy, seed=seed + 1 + round_)
    raise AssertionError(f"the sample of {batch.name} never came in")


def splitting_target(batch: Batch) -> float:
    """A target at which the point estimate splits the batch between the machine and the crowd (which one
    depends on the crowd's answers), so a test of both parts means something."""
    for target in (0.97, 0.95, 0.9, 0.99, 0.85, 0.8, 0.75, 0.7):
        plan = plan_routing(batch, target, risk=None)
        if plan.accepted and plan.to_humans:
            return target
    raise AssertionError("no target splits the batch between the machine and the crowd")


@pytest.fixture
def calibrated(sampled):
    """``sampled`` with its sample answered by 4 simulated annotators, its escalations in."""
    answer_until_in(sampled)
    return sampled


def _pages(name: str) -> list[tuple[str, str]]:
    return [
        ("get", reverse("annotation:batch-machine", args=[name])),
        ("post", reverse("annotation:batch-prelabel", args=[name])),
        ("post", reverse("annotation:batch-calibration-sample", args=[name])),
        ("get", reverse("annotation:batch-calibration", args=[name])),
        ("get", reverse("annotation:batch-calibration-live", args=[name])),
        ("get", reverse("annotation:batch-routing", args=[name])),
        ("post", reverse("annotation:batch-routing", args=[name])),
    ]


def test_every_page_is_for_researchers(machine_batch, annotators, client):
    for method, url in _pages("mb"):
        response = getattr(client, method)(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"], url
    client.force_login(annotators[0])
    for method, url in _pages("mb"):
        assert getattr(client, method)(url).status_code == 403, url
    assert not PreLabel.objects.exists() and not Job.objects.exists()


@pytest.mark.slow
def test_the_whole_path_on_the_site(machine_batch, researcher, client, django_capture_on_commit_callbacks):
    client.force_login(researcher)
    detail = client.get(reverse("annotation:batch-detail", args=["mb"])).content.decode()
    assert reverse("annotation:batch-machine", args=["mb"]) in detail

    page = client.get(reverse("annotation:batch-machine", args=["mb"])).content.decode()
    assert 'id="no-runs"' in page and "gender-v2" in page and "Answer with the letter only." in page
    assert 'value="openai" disabled' in page and 'id="openai-off"' in page

    # Pre-label with the rules: a job, followed on its page, then a run on the machine page.
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("annotation:batch-prelabel", args=["mb"]), {"labeller": "rules"})
    job = Job.objects.get(kind="annotation.prelabel")
    assert response.status_code == 302 and response["Location"] == reverse("core:job-detail", args=[job.pk])
    job.refresh_from_db()
    assert job.status == Job.Status.DONE, job.message
    assert job.result["labelled"] + job.result["unlabelled"] == 150
    assert job.result["url"] == reverse("annotation:batch-machine", args=["mb"])
    page = client.get(reverse("annotation:batch-machine", args=["mb"])).content.decode()
    assert 'id="runs-table"' in page and "rules-v1" in page
    assert f'<td class="num">{job.result["labelled"]}</td>' in page

    # Before the sample: the report page is a friendly message, not an error.
    response = client.get(reverse("annotation:batch-calibration", args=["mb"]))
    assert response.status_code == 200 and 'id="calibration-waiting"' in response.content.decode()

    # The blind sample: created and published.
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("annotation:batch-calibration-sample", args=["mb"]), {"sample": 60, "seed": 2, "publish": "on"}
        )
    assert response.status_code == 302
    child = calibration_batch(machine_batch)
    assert child.name == "mb-part-1" and child.status == Batch.Status.PUBLISHED
    assert child.parent == machine_batch and child.queries.count() == 60
    page = client.get(reverse("annotation:batch-machine", args=["mb"])).content.decode()
    assert reverse("annotation:batch-detail", args=["mb-part-1"]) in page
    assert reverse("annotation:batch-calibration", args=["mb"]) in page
    child_page = client.get(reverse("annotation:batch-detail", args=["mb-part-1"])).content.decode()
    assert 'id="derived-from"' in child_page and "Calibration sample of" in child_page

    # While the sample is answered the report waits and polls itself: the report's job (started by the
    # first view, computed at its commit) says why there is no report yet.
    with django_capture_on_commit_callbacks(execute=True):
        page = client.get(reverse("annotation:batch-calibration", args=["mb"])).content.decode()
    assert 'id="calibration-computing"' in page and 'hx-trigger="every 2s"' in page
    page = client.get(reverse("annotation:batch-calibration", args=["mb"])).content.decode()
    assert 'id="calibration-waiting"' in page and 'hx-trigger="every 5s"' in page

    with django_capture_on_commit_callbacks(execute=True):
        answer_until_in(machine_batch)  # its syncs start the report of the answers so far
        client.get(reverse("annotation:batch-calibration", args=["mb"]))  # of the last ones, if not yet
    page = client.get(reverse("annotation:batch-calibration", args=["mb"])).content.decode()
    for part in ("accuracy", "kappa", "kappa-ci", "ece", "brier", "per-category", "confusion", "reliability"):
        assert f'id="{part}"' in page, part
    assert 'id="alt-test"' in page and 'id="proportions"' in page
    assert page.count("<svg") == 2 and "currentColor" in page
    assert 'id="winning-rate"' in page and 'id="alt-annotators"' in page
    live = client.get(reverse("annotation:batch-calibration-live", args=["mb"])).content.decode()
    assert live.startswith("{%") is False and 'id="calibration-live"' in live

    # Routing: the preview is plan_routing's, nothing is created.
    certified = client.get(reverse("annotation:batch-routing", args=["mb"]), {"target_accuracy": "0.95"})
    assert "No threshold could be certified" in certified.content.decode()  # 60 sample queries are too few
    target = splitting_target(machine_batch)
    estimate = {"target_accuracy": str(target), "no_guarantee": "on"}
    preview = client.get(reverse("annotation:batch-routing", args=["mb"]), estimate)
    assert preview.status_code == 200
    text = preview.content.decode()
    assert "no guarantee" in text.lower()
    plan = plan_routing(machine_batch, target, risk=None)
    assert plan.accepted and plan.to_humans  # both parts, so the test means something
    assert f'id="plan-to-humans">{len(plan.to_humans)}<' in text
    assert f'id="plan-accepted">{len(plan.accepted)}<' in text
    assert f'id="plan-cost">${plan.cost}<' in text and f'id="plan-saving">${plan.saving}<' in text
    assert f'id="plan-cost-all">${plan.cost_all}<' in text
    assert not machine_batch.routings.exists()

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("annotation:batch-routing", args=["mb"]), estimate)
    assert response.status_code == 302
    routing = machine_batch.routings.get()
    assert len(routing.accepted) == len(plan.accepted) and routing.to_humans == len(plan.to_humans)
    page = client.get(reverse("annotation:batch-routing", args=["mb"])).content.decode()
    assert 'id="routing-in-force"' in page
    routed = Batch.objects.get(pk=routing.routed_batch.pk)
    assert routed.status == Batch.Status.PUBLISHED
    assert sorted(routed.queries.filter(is_gold=False).values_list("qid", flat=True)) == sorted(plan.to_humans)
    assert f'id="routed-batch">{routed.name}<' in page
    routed_page = client.get(reverse("annotation:batch-detail", args=[routed.name])).content.decode()
    assert "Routed queries of" in routed_page


def test_bad_input_is_a_form_error_naming_the_field(calibrated, researcher, client):
    client.force_login(researcher)
    response = client.post(reverse("annotation:batch-prelabel", args=["mb"]), {"labeller": "oracle"})
    assert response.status_code == 400 and "Select a valid choice" in response.content.decode()
    response = client.post(reverse("annotation:batch-prelabel", args=["mb"]), {"labeller": "rules", "samples": 3})
    assert response.status_code == 400 and "only the openai pre-labeller takes samples" in response.content.decode()
    response = client.post(reverse("annotation:batch-prelabel", args=["mb"]), {"labeller": "openai"})
    assert response.status_code == 400 and "PRELABEL_MODEL" in response.content.decode()
    response = client.post(reverse("annotation:batch-calibration-sample", args=["mb"]), {"sample": 0})
    assert response.status_code == 400 and "greater than or equal to 1" in response.content.decode()
    routing = reverse("annotation:batch-routing", args=["mb"])
    response = client.get(routing, {"target_accuracy": "1.5"})
    assert response.status_code == 400 and "the target accuracy must be in (0, 1]" in response.content.decode()
    response = client.get(routing, {"target_accuracy": "0.9", "budget": "-1"})
    # A budget is plain dollars (issue 41): a negative one is refused naming the field.
    assert (
        response.status_code == 400
        and "budget: &#x27;-1&#x27; is not an amount of dollars" in response.content.decode()
    )
    response = client.post(routing, {"target_accuracy": "1.5"})
    assert response.status_code == 400 and not Batch.objects.filter(purpose=Batch.Purpose.ROUTED).exists()
    assert not Job.objects.filter(kind="annotation.prelabel").exists()


def test_a_refusal_of_the_service_is_a_message_on_the_page(machine_batch, researcher, client):
    """No pre-labels yet: the sample is refused with the service's words, no 500."""
    client.force_login(researcher)
    response = client.post(reverse("annotation:batch-calibration-sample", args=["mb"]), {"sample": 10})
    assert response.status_code == 400 and "run prelabel first" in response.content.decode()
    response = client.get(reverse("annotation:batch-routing", args=["mb"]), {"target_accuracy": "0.95"})
    assert response.status_code == 400 and "no calibration sample yet" in response.content.decode()


def test_the_samples_hit_page_shows_no_machine_label(sampled, researcher, client):
    child = calibration_batch(sampled)
    annotator = create_annotator("blind-a", password="pw-secret-123")
    client.force_login(annotator)
    response = client.get(reverse("annotation:next"), follow=True)
    page = response.content.decode()
    assert response.status_code == 200 and 'name="q-1"' in page
    for hint in ("confidence", "rules-v1", "machine", "prelabel", "stratum"):
        assert hint not in page.lower(), hint
    client.force_login(researcher)
    hit = child.hits.order_by("position").first()
    preview = client.get(reverse("annotation:hit-preview", args=[child.name, hit.position])).content.decode()
    for hint in ("confidence", "rules-v1", "machine", "stratum"):
        assert hint not in preview.lower(), hint


@pytest.mark.slow
def test_the_polled_report_is_computed_again_only_when_the_crowd_work_changes(
    calibrated, researcher, client, monkeypatch, django_capture_on_commit_callbacks
):
    from annotation.machine.report import selectors as calibration_service
    from annotation.machine.services import background

    computed = []

    def counting(batch, *args, **kwargs):
        computed.append(batch.name)
        return calibration_service.calibration_report(batch, *args, **kwargs)

    monkeypatch.setattr(background, "calibration_report", counting)
    Job.objects.filter(kind=background.CALIBRATION_REPORT_KIND).delete()  # queued by the fixture's syncs, never run
    client.force_login(researcher)
    live = reverse("annotation:batch-calibration-live", args=["mb"])
    with django_capture_on_commit_callbacks(execute=True):
        client.get(live)  # starts the report's job, computed at the commit
    first = client.get(live).content
    assert client.get(live).content == first and client.get(reverse("annotation:batch-calibration", args=["mb"]))
    assert computed == ["mb"]  # four requests, one computation
    assignment = Assignment.objects.filter(hit__batch=calibration_batch(calibrated)).first()
    Assignment.objects.filter(pk=assignment.pk).update(reviewed_at=timezone.now())  # new work reviewed
    with django_capture_on_commit_callbacks(execute=True):
        client.get(live)
    assert computed == ["mb", "mb"]
