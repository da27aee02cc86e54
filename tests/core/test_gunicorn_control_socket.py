"""gunicorn's control socket is the site's own (issue 53): gunicorn's default, one path per account
(``~/.gunicorn/gunicorn.ctl`` or ``$XDG_RUNTIME_DIR/gunicorn.ctl``), was shared by every site the
account serves. The settings are read as gunicorn reads them (its own Config and config file loader)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

READ = """
import json
from gunicorn.app.base import Application

class Read(Application):
    def init(self, parser, opts, args):
        return None
    def load_config(self):
        self.load_config_from_file("python:config.gunicorn")
    def load(self):
        return None

cfg = Read().cfg
print(json.dumps({"path": cfg.control_socket, "off": cfg.control_socket_disable, "mode": cfg.control_socket_mode}))
"""


def _read(tmp_path: Path, **env: str) -> dict:
    import json

    environment = {k: v for k, v in os.environ.items() if k not in ("VAR_DIR", "GUNICORN_CONTROL_SOCKET")}
    environment.update(HOME=str(tmp_path / "home"), XDG_RUNTIME_DIR="", **env)
    done = subprocess.run(
        [sys.executable, "-c", READ], cwd=ROOT, env=environment, capture_output=True, text=True, check=True, timeout=60
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_two_sites_of_one_account_have_two_control_sockets(tmp_path):
    one = _read(tmp_path, VAR_DIR=str(tmp_path / "site-one"))
    two = _read(tmp_path, VAR_DIR=str(tmp_path / "site-two"))
    assert one["path"] == str(tmp_path / "site-one" / "gunicorn.ctl") and not one["off"]
    assert two["path"] == str(tmp_path / "site-two" / "gunicorn.ctl")
    assert ".gunicorn" not in one["path"] and one["mode"] == 0o600


def test_the_control_socket_can_be_moved_or_turned_off(tmp_path):
    assert _read(tmp_path, GUNICORN_CONTROL_SOCKET=str(tmp_path / "x.ctl"))["path"] == str(tmp_path / "x.ctl")
    assert _read(tmp_path, GUNICORN_CONTROL_SOCKET="off")["off"] is True
