"""A NUL character in a path or parameter is refused before any lookup (PostgreSQL cannot hold
it: the API sweep on PostgreSQL found 22 such requests answering 500, among them
``GET /api/pooling/runs/%00/`` and ``?batch=%00``). SQLite would quietly find nothing, so the
assertions are on the refusal itself, which holds on either database."""

import pytest


@pytest.fixture
def researcher_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("r", password="pw-secret-123", is_staff=True))
    return client


@pytest.mark.django_db
@pytest.mark.parametrize(
    "address",
    [
        "/api/pooling/runs/%00/",
        "/api/annotation/batches/a%00b/agreement/",
        "/api/metrics/reports/%00/table/",
        "/api/annotation/judgments/?batch=%00",
        "/api/pooling/runs/?x%00=1",
    ],
)
def test_the_api_refuses_a_nul_with_a_json_400(researcher_client, address):
    response = researcher_client.get(address)
    assert response.status_code == 400
    assert "NUL" in response.json()["detail"]


@pytest.mark.django_db
@pytest.mark.parametrize("address", ["/pooling/pools/%00/", "/annotation/batches/?q=%00"])
def test_a_page_refuses_a_nul_with_a_plain_400(researcher_client, address):
    response = researcher_client.get(address)
    assert response.status_code == 400
    assert b"NUL character" in response.content


@pytest.mark.django_db
def test_an_ordinary_address_passes(researcher_client):
    assert researcher_client.get("/api/pooling/runs/", {"q": "a b"}).status_code == 200
