"""A request body over DATA_UPLOAD_MAX_MEMORY_SIZE is a JSON 413 from the API, not Django's HTML 400."""

import json

import pytest


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "content_type", "body"),
    [
        ("/api/annotation/batches/", "application/json", lambda size: json.dumps({"name": "x" * size})),
        ("/api/annotation/batches/", "application/x-www-form-urlencoded", lambda size: "name=" + "x" * size),
    ],
)
def test_an_oversized_body_is_a_json_413(client, django_user_model, settings, url, content_type, body):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    staff = django_user_model.objects.create_user("staff", password="pw-secret-123", is_staff=True)
    client.force_login(staff)
    response = client.post(url, body(20_000), content_type=content_type)
    assert response.status_code == 413, (response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("application/json")
    assert "10000 bytes" in response.json()["detail"]
    # Just under the limit the same endpoint reads the body (and refuses its content as usual, in JSON).
    small = client.post(url, body(100), content_type=content_type)
    assert small.status_code == 400 and small["Content-Type"].startswith("application/json")
