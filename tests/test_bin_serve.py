"""``bin/serve`` as the README gives it: the site served on the database that is there, without the demo."""

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
@pytest.mark.embedded
def test_bin_serve_serves_a_fresh_database_and_says_how_to_get_an_account(tmp_path):
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_DEBUG")}
    env.update(PORT=str(port), VAR_DIR=str(tmp_path / "var"))
    server = subprocess.Popen(
        [str(ROOT / "bin" / "serve")],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        deadline, answer = time.monotonic() + 120, None
        while time.monotonic() < deadline and server.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/", timeout=5) as response:
                    answer = response.status, response.read().decode()
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.5)
        assert answer is not None, "bin/serve did not answer within two minutes"
        assert answer[0] == 200 and "Log in" in answer[1]
        assert (tmp_path / "var" / "db.sqlite3").exists()  # migrated where VAR_DIR points, not in the checkout
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        output, _ = server.communicate(timeout=30)
    assert "No researcher account yet: run bin/demo --no-serve" in output
    assert f"Serving on http://127.0.0.1:{port}/" in output
    # Django's shell, asked whether an account exists, says nothing of "objects imported automatically".
    assert "imported automatically" not in output
