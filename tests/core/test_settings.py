"""Settings: typed environment variables, secure by default, ``check --deploy`` clean.

Each case starts a fresh interpreter (settings are read once per process) with a chosen
environment, as an operator's shell would.
"""

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config import env

ROOT = Path(__file__).resolve().parents[2]
SECURITY_VARIABLES = (
    "DJANGO_ALLOW_ASYNC_UNSAFE",
    "DJANGO_DEBUG",
    "DJANGO_SECRET_KEY",
    "WORKER_PSEUDONYM_KEY",
    "DJANGO_SECURE_SSL_REDIRECT",
    "DJANGO_SECURE_COOKIES",
)


def manage(*args: str, **variables: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k not in SECURITY_VARIABLES}
    environment.update(variables)
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120
    )


def production_keys() -> dict[str, str]:
    return {"DJANGO_SECRET_KEY": secrets.token_urlsafe(50), "WORKER_PSEUDONYM_KEY": secrets.token_urlsafe(50)}


@pytest.mark.parametrize(
    ("reader", "value", "expected"),
    [(env.env_bool, "ture", "boolean"), (env.env_int, "12a", "whole number"), (env.env_float, "fast", "number")],
)
def test_a_malformed_value_names_the_variable(monkeypatch, reader, value, expected):
    monkeypatch.setenv("SOME_SETTING", value)
    with pytest.raises(ImproperlyConfigured, match=rf"SOME_SETTING='{value}'.*{expected}"):
        reader("SOME_SETTING", 1)


@pytest.mark.parametrize(("value", "expected"), [("1", True), ("Yes", True), ("off", False), ("", True)])
def test_booleans(monkeypatch, value, expected):
    monkeypatch.setenv("SOME_FLAG", value)
    assert env.env_bool("SOME_FLAG", True) is expected


def test_production_refuses_to_start_without_its_secrets():
    result = manage("check")
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY and WORKER_PSEUDONYM_KEY must be set" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_pseudonym_key_must_differ_from_the_secret_key():
    key = secrets.token_urlsafe(50)
    result = manage("check", DJANGO_SECRET_KEY=key, WORKER_PSEUDONYM_KEY=key)
    assert result.returncode != 0 and "must differ" in result.stderr


def test_a_typo_in_a_boolean_stops_start_up():
    result = manage("check", DJANGO_DEBUG="ture")
    assert result.returncode != 0
    assert "DJANGO_DEBUG='ture'" in result.stderr


@pytest.mark.slow
def test_debug_is_off_unless_asked_for_and_check_deploy_is_clean(tmp_path):
    result = manage("check", "--deploy", "--fail-level", "WARNING", VAR_DIR=str(tmp_path / "var"), **production_keys())
    assert result.returncode == 0, result.stdout + result.stderr
    assert not (tmp_path / "var").exists()  # nothing created at import time
    shown = manage(
        "shell",
        "-c",
        "from django.conf import settings as s; print(s.DEBUG, s.SECURE_SSL_REDIRECT, s.SESSION_COOKIE_SECURE, s.SECURE_HSTS_SECONDS)",
        VAR_DIR=str(tmp_path / "var"),
        **production_keys(),
    )
    assert shown.stdout.splitlines()[-1].split() == ["False", "True", "True", "31536000"]


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("help",),
        ("help", "import_queries"),
        ("import_queries", "--help"),
        ("prelabel", "-h"),
        ("migrate", "--help"),
    ],
)
def test_help_works_without_the_production_secrets(args):
    result = manage(*args, DJANGO_DEBUG="0")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert "usage: manage.py" in result.stdout or "Available subcommands" in result.stdout


@pytest.mark.parametrize("args", [("check",), ("import_queries", "q.tsv", "--name", "help"), ("runserver", "help")])
def test_only_help_is_spared_the_secrets(args):
    result = manage(*args, DJANGO_DEBUG="0")
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY and WORKER_PSEUDONYM_KEY must be set" in result.stderr


def test_serving_without_the_secrets_is_still_refused():
    environment = {k: v for k, v in os.environ.items() if k not in SECURITY_VARIABLES} | {"DJANGO_DEBUG": "0"}
    result = subprocess.run(
        [sys.executable, "-c", "import config.wsgi"], cwd=ROOT, env=environment, capture_output=True, text=True
    )
    assert result.returncode != 0 and "DJANGO_SECRET_KEY and WORKER_PSEUDONYM_KEY must be set" in result.stderr
