"""The named sets' and the across-sets pages in a real browser: reached from the navigation,
no sideways scroll at 390 px, nothing loaded from outside the site."""

import io
from urllib.parse import urlsplit

import pytest
from django.core.management import call_command

from core.models import Job

PHONE = {"width": 390, "height": 844}


def fits_a_phone(page) -> None:
    page.set_viewport_size(PHONE)
    width = page.evaluate("document.scrollingElement.scrollWidth")
    assert width <= PHONE["width"], f"{page.url} scrolls sideways at 390 px ({width} px wide)"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_named_sets_and_across_sets_pages_on_a_phone(world, page, login, live_server, django_user_model):
    from metrics.services import build_set_reports, compare_reports
    from pooling.models import QuerySet, Run

    call_command("import_named_set", "grep-biasir", stdout=io.StringIO())
    call_command("import_queries", str(world / "queries.tsv"), name="q2", verbosity=0)  # the same queries, another set
    runs = list(Run.objects.filter(name__in=["a", "b", "c"]).order_by("name"))
    reports = build_set_reports([(QuerySet.objects.get(name=n), runs) for n in ("q", "q2")], "phone", cutoffs=[2])
    job = Job.objects.create(kind="metrics.compare_sets", status=Job.Status.DONE, description="ARaB across q, q2")
    job.result = compare_reports(reports, "ARaB", cutoff=2, samples=100)
    job.save()

    outside = []
    host = urlsplit(live_server.url).netloc
    page.on(
        "request",
        lambda request: outside.append(request.url) if urlsplit(request.url).netloc not in (host, "") else None,
    )
    django_user_model.objects.create_user("researcher", password="pw-secret-123", is_staff=True)
    login("researcher")
    page.goto(live_server.url + "/pooling/import/")
    with page.expect_navigation():
        page.get_by_role("navigation").get_by_role("link", name="Named sets").click()
    assert page.locator("#set-grep-biasir").get_by_text("Imported as").is_visible()
    fits_a_phone(page)
    page.set_viewport_size({"width": 1280, "height": 800})
    with page.expect_navigation():
        page.get_by_role("navigation").get_by_role("link", name="Across sets").click()
    assert page.locator("#sets-form").is_visible()
    fits_a_phone(page)
    page.goto(live_server.url + f"/metrics/sets/{job.pk}/")
    assert page.locator("#sets-rankings tbody tr").count() == 3
    fits_a_phone(page)
    assert not outside, outside
