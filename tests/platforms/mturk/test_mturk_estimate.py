"""MTurk's prices in the batch form's live estimate, and its options refused on another platform."""

from django.urls import reverse

from annotation.models import Batch

FORM = {"provider": "mturk", "assignments_per_query": 3, "queries_per_hit": 4, "reward": "0.10", "gold_per_hit": 0}


def test_the_estimate_pays_mturks_commission(query_set, researcher, client):
    client.force_login(researcher)
    # 6 queries, 4 per HIT: 2 x 3 x ($0.10 + 20% fee $0.02) = $0.72
    html = client.get(reverse("annotation:batch-estimate"), {**FORM, "queries": "gq"}).content.decode()
    assert "<strong>$0.72</strong> for 2 HITs" in html
    # 10 assignments per HIT pay MTurk's 40% fee: 1 HIT x 10 x ($0.10 + $0.04) = $1.40
    html = client.get(
        reverse("annotation:batch-estimate"),
        {**FORM, "queries": "gq", "assignments_per_query": 10, "queries_per_hit": 6},
    ).content.decode()
    assert "<strong>$1.40</strong> for 1 HIT " in html


def test_mturks_options_are_refused_on_another_platform_by_name(query_set, researcher, client):
    client.force_login(researcher)
    response = client.post(
        reverse("annotation:batch-create"),
        {**FORM, "provider": "local", "name": "web", "queries": "gq", "locales": "US"},
    )
    assert response.status_code == 400
    assert "Amazon Mechanical Turk options only apply to the mturk provider" in response.content.decode()
    assert not Batch.objects.exists()
