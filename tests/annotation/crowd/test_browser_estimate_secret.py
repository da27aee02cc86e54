"""The live cost estimate carries no secret in its GET (issue 44.5): it included the whole batch form,
whose CSRF token then went into the query string, and so into every access log on the way."""

import pytest
from django.urls import reverse


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_estimate_request_carries_no_csrf_token(query_set, researcher, page, login):
    login("researcher")
    estimates = []
    page.on("request", lambda r: estimates.append(r.url) if "/batches/new/estimate/" in r.url else None)
    page.goto(reverse("annotation:batch-create") + "?queries=gq")
    with page.expect_request(lambda r: "/batches/new/estimate/" in r.url and "reward=0.37" in r.url):
        page.locator("#id_reward").fill("0.37")  # the form's fields still go
    page.locator("#estimate strong").first.wait_for()  # the estimate answered
    assert len(estimates) >= 2 and all("csrfmiddlewaretoken" not in url for url in estimates), estimates
    token = page.locator("#batch-form input[name=csrfmiddlewaretoken]")
    assert token.count() == 1 and token.input_value()  # the post of the form still has its token
