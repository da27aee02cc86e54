"""tests/conftest.py lists the static files once per worker (``_static_files_listed_once``): every
test client still gets each file WhiteNoise would serve, as the file on disk says, with its headers."""

from pathlib import Path

from django.test import Client

STATIC = Path(__file__).resolve().parent.parent / "static"


def test_every_new_client_gets_the_static_files_as_on_disk():
    on_disk = (STATIC / "css" / "site.css").read_bytes()
    for _ in range(3):  # the first client lists the files, the others take the same entries
        response = Client().get("/static/css/site.css")
        assert response.status_code == 200
        assert b"".join(response.streaming_content) == on_disk
        assert response["Content-Type"].startswith("text/css")
        assert int(response["Content-Length"]) == len(on_disk)
    assert Client().get("/static/css/no-such-file.css").status_code == 404
