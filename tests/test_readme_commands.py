"""Every command of the README runs as written (issue 45, item 7), or is skipped for a reason listed here.

The README's shell code blocks are read from README.md itself, so a command added there is
tested at once: each command line (``\\`` continuations joined, comments dropped) must match
one rule of :data:`RULES`, else :func:`test_every_readme_command_has_a_rule` fails naming it.
The rules say how a command is run:

- ``bin/demo`` and ``bin/serve`` (the first screen) run as processes, the server started and
  stopped, and the demo's login is checked (:func:`test_the_first_screen_gets_a_newcomer_to_the_site`);
- every ``python manage.py ...`` line runs in-process with its own words, in README order, in
  one folder holding small synthetic files under the README's names
  (:func:`test_every_manage_py_command_runs_as_written`, which also checks what the "Using it
  on real data" block makes); the ``curl`` example is sent, headers and body as written, to
  the site through Django's test client with a real token, once the commands have imported
  the data it names;
- the rest is skipped, each with its reason in :data:`SKIPPED`, printed by the tests' summary.

Only people are stood in for: an annotator's password prompt and a confirmation are answered, and after a command
that hands out HITs (``publish_batch``, ``calibrate --sample``, ``route``), the in-house
annotators answer (``simulate_annotations``), as the README's "then, as work comes in" says.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from http.cookiejar import CookieJar
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.test_readme_real_data import check_real_data_outputs, write_inputs

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


@dataclass(frozen=True)
class Command:
    section: str  #: the heading above its block
    line: int  #: its first line in README.md
    text: str  #: as written, continuations joined
    words: tuple[str, ...]  #: shell words, the comment dropped

    def __str__(self) -> str:
        return f"README.md:{self.line} ({self.section}): {self.text}"


def readme_commands(text: str | None = None) -> list[Command]:
    """The command lines of every ```sh block of the README, in order."""
    text = README.read_text(encoding="utf-8") if text is None else text
    commands, section, block, pending, start = [], "", False, "", 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not block and line.startswith("#"):
            section = line.lstrip("#").strip()
        elif line.strip() in ("```sh", "```bash", "```shell", "```console"):
            block = True
        elif block and line.strip() == "```":
            block = False
        elif block:
            start = start or number
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            full, pending = pending + line, ""
            words = tuple(shlex.split(full, comments=True))
            if words:
                commands.append(Command(section, start, " ".join(full.split()), words))
            start = 0
    return commands


#: Commands skipped, and why (a predicate on the words, the reason shown in the summary).
SKIPPED: list[tuple[str, object, str]] = [
    (
        "bin/demo",
        lambda w: w == ("bin/demo",),
        "is bin/demo --no-serve then bin/serve (it execs bin/serve after the demo), both run as the first screen",
    ),
    (
        "bin/test",
        lambda w: w[0] == "bin/test",
        "runs the whole suite, this test included (about 18 minutes); CI runs exactly it (.ci/run)",
    ),
    (
        "library install",
        lambda w: w[:2] == ("pip", "install"),
        "installs the library into your environment; tests/genderbias installs it the same way into a fresh venv",
    ),
    (
        "benchmarks",
        lambda w: w[0].startswith("bin/benchmark") or (_manage(w) and w[2].startswith("benchmark_")),
        "benchmarks take minutes to hours on millions of lines (their figures: docs/benchmarks.md)",
    ),
    (
        "pytest",
        lambda w: "pytest" in w[:3],
        "runs the test suite, this test inside it",
    ),
    (
        "openai",
        lambda w: any("openai" in word for word in w),
        "needs an OpenAI-compatible endpoint on the internet (PRELABEL_API_URL, PRELABEL_MODEL)",
    ),
    (
        "Hugging Face upload",
        lambda w: "--push" in w,
        "uploads to the Hugging Face Hub (internet, HF_TOKEN)",
    ),
]


def _manage(words: tuple[str, ...]) -> bool:
    return words[:2] == ("python", "manage.py") or words[:2] == (".venv/bin/python", "manage.py")


def rule_of(command: Command) -> str:
    """``skip:<name>``, ``process`` (bin/demo, bin/serve), ``env``, ``manage``, ``curl``; else ``none``."""
    words = command.words
    for name, matches, _ in SKIPPED:
        if matches(words):
            return f"skip:{name}"
    if words[0] in ("bin/demo", "bin/serve", "bin/setup"):
        return "process"
    if words[0] in ("source", "export"):
        return "env"
    if _manage(words):
        return "manage"
    if words[0] == "curl":
        return "curl"
    return "none"


def test_every_readme_command_has_a_rule():
    commands = readme_commands()
    assert len(commands) > 20, commands  # the blocks are found
    unknown = [str(c) for c in commands if rule_of(c) == "none"]
    assert not unknown, "README commands no test runs (add a rule in tests/test_readme_commands.py):\n" + "\n".join(
        unknown
    )
    first = [c.words for c in commands if c.section == "Start here"]
    assert first == [("bin/demo", "--no-serve"), ("bin/serve",)]  # the first screen: the demo, then the site


def test_the_reader_joins_continuations_and_drops_comments():
    text = "# A\n```sh\npython manage.py x --a 1 \\\n    --b 2   # why\n# only a comment\nbin/test\n```\n"
    commands = readme_commands(text)
    assert [(c.line, c.words, c.section) for c in commands] == [
        (3, ("python", "manage.py", "x", "--a", "1", "--b", "2"), "A"),
        (6, ("bin/test",), "A"),
    ]
    assert rule_of(commands[1]) == "skip:bin/test"
    assert rule_of(readme_commands("```sh\nmake everything\n```\n")[0]) == "none"


@pytest.mark.parametrize("name,reason", [(name, reason) for name, _, reason in SKIPPED])
def test_skipped_readme_commands_say_why(name, reason):
    skipped = [str(c) for c in readme_commands() if rule_of(c) == f"skip:{name}"]
    if not skipped:
        pytest.skip(f"no README command is skipped as {name}")
    pytest.skip(f"{reason}: " + "; ".join(skipped))


# --- the manage.py commands, in one world -------------------------------------------------------


def _earlier_study(folder: Path, batch_name: str, name: str) -> None:
    """``route_audit``'s "labelled file of the batch's queries (an earlier study's labels)": the
    batch's queries labelled by the study's word rules, as an earlier study's would be."""
    from annotation.machine.prelabellers import get_prelabeller
    from annotation.models import BatchQuery

    rows = list(BatchQuery.objects.filter(batch__name=batch_name, is_gold=False).values_list("qid", "text"))
    labels = [p.label for p in get_prelabeller("rules").label(rows)]
    with open(folder / name, "w", encoding="utf-8") as out:
        for (qid, text), label in zip(rows, labels, strict=True):
            out.write(f"{qid}\t{text}\t{label or 'n'}\n")


def _answer_new_work(before: set[str]) -> set[str]:
    """The in-house annotators answer every published local batch not answered yet."""
    from annotation.models import Batch

    answered = set(before)
    for batch in Batch.objects.filter(provider="local").exclude(name__in=answered).order_by("pk"):
        if batch.status == Batch.Status.PUBLISHED:
            call_command("simulate_annotations", batch.name, stdout=StringIO(), stderr=StringIO())
            answered.add(batch.name)
            if batch.purpose == Batch.Purpose.CALIBRATION:
                _until_the_sample_is_in(batch)
    return answered


def _until_the_sample_is_in(sample) -> None:
    """As the README says, a blind sample's undecided queries get more votes at each sync: synced and
    answered until none awaits votes (routing waits for that, issue 58)."""
    from annotation.crowd.services.sync import sync_batch
    from annotation.machine.selectors import read_sample
    from annotation.machine.services.routing import reference_state
    from platforms.inhouse.services.simulation import simulate_local_annotations

    for round_ in range(10):
        if not reference_state(read_sample(sample.parent))["pending"]:
            return
        sync_batch(sample)
        simulate_local_annotations(sample, annotators=7, accuracy=0.9, seed=100 + round_)
    raise AssertionError(f"the sample {sample.name} never came in")


def _send_curl(client, words: tuple[str, ...], token: str) -> object:
    """A README ``curl`` line sent through the test client: its headers (``$TOKEN`` the token) and body."""
    headers, body, url = {}, None, None
    rest = list(words[1:])
    while rest:
        word = rest.pop(0)
        if word == "-H":
            key, value = rest.pop(0).split(":", 1)
            headers[key.strip()] = value.strip().replace("$TOKEN", token)
        elif word == "-d":
            body = rest.pop(0)
        elif not word.startswith("-"):
            url = word
    path = urllib.parse.urlsplit(url).path
    extra = {"HTTP_" + k.upper().replace("-", "_"): v for k, v in headers.items() if k.lower() != "content-type"}
    content_type = headers.get("Content-Type", "application/x-www-form-urlencoded")
    return client.post(path, body or "", content_type=content_type, **extra)


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_every_manage_py_command_runs_as_written(tmp_path, monkeypatch, settings, client):
    settings.VAR_DIR = tmp_path / "var"
    write_inputs(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("getpass.getpass", lambda prompt="": "a-long-annotator-passphrase")
    monkeypatch.setattr("builtins.input", lambda prompt="": "y")  # the researcher confirms (route's "Go ahead?")
    from django.contrib.auth import get_user_model

    from core.services.api_tokens import api_token

    researcher = get_user_model().objects.create_user("researcher", password="pw-secret-123", is_staff=True)
    token = api_token(researcher)
    answered: set[str] = set()
    ran = []
    # The API example (curl) is about a site holding data: sent once the commands have imported it.
    commands = [c for c in readme_commands() if rule_of(c) == "manage"]
    commands += [c for c in readme_commands() if rule_of(c) == "curl"]
    for command in commands:
        rule = rule_of(command)
        words = command.words
        if rule == "curl":
            answer = _send_curl(client, words, token)
            assert answer.status_code < 400, f"{command}: {answer.status_code} {answer.content[:500]!r}"
            ran.append(command)
            continue
        if words[2] == "route_audit":
            labels = words[words.index("--labels") + 1]
            _earlier_study(tmp_path, words[3], labels)
        try:
            call_command(*words[2:], stdout=StringIO(), stderr=StringIO())
        except BaseException as exc:  # the command line and its error, not just a traceback
            raise AssertionError(f"{command} failed: {exc!r}") from exc
        ran.append(command)
        if words[2] in ("publish_batch", "calibrate", "route"):  # "then, as work comes in"
            answered = _answer_new_work(answered)
    names = {c.words[2] for c in ran if c.words[0] != "curl"}
    assert {"import_collection", "pool", "create_batch", "publish_dataset", "prelabel", "calibrate", "route"} <= names
    assert any(c.words[0] == "curl" for c in ran)
    assert (tmp_path / "sigir20-dataset" / "croissant.json").exists()
    check_real_data_outputs(tmp_path)


# --- the first screen: bin/demo --no-serve, then bin/serve ----------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(opener, url: str) -> tuple[int, str]:
    with opener.open(url, timeout=10) as response:
        return response.status, response.read().decode()


@pytest.mark.slow
@pytest.mark.embedded
@pytest.mark.slow
@pytest.mark.embedded
def test_bin_setup_sets_up_an_empty_database_and_nothing_else(tmp_path):
    """``bin/setup`` as the README gives it: .venv and a migrated database, no synthetic data."""
    (setup,) = [c for c in readme_commands() if c.words == ("bin/setup",)]
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_DEBUG")}
    env.update(VAR_DIR=str(tmp_path / "var"))
    done = subprocess.run(
        list(setup.words), cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    import sqlite3

    with sqlite3.connect(tmp_path / "var" / "db.sqlite3") as db:
        applied = db.execute("select count(*) from django_migrations").fetchone()[0]
        tables = {name for (name,) in db.execute("select name from sqlite_master where type = 'table'")}
        counts = {
            t: db.execute(f'select count(*) from "{t}"').fetchone()[0]
            for t in ("pooling_collection", "pooling_run", "auth_user")
        }
    assert applied > 0 and "pooling_pool" in tables
    assert counts == {"pooling_collection": 0, "pooling_run": 0, "auth_user": 0}, counts


@pytest.mark.slow
def test_the_first_screen_gets_a_newcomer_to_the_site(tmp_path):
    first = [c for c in readme_commands() if c.section == "Start here"]
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_DEBUG")}
    env.update(VAR_DIR=str(tmp_path / "var"))
    demo = subprocess.run(
        list(first[0].words), cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False
    )
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert "bin/serve serves the site (log in as demo / demo)" in demo.stdout

    port = _free_port()
    server = subprocess.Popen(
        list(first[1].words),
        cwd=ROOT,
        env=env | {"PORT": str(port)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
    try:
        deadline, page = time.monotonic() + 120, None
        while time.monotonic() < deadline and server.poll() is None:
            try:
                page = _get(opener, f"{base}/accounts/login/")
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.5)
        assert page is not None and page[0] == 200, "bin/serve did not answer within two minutes"
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page[1]).group(1)
        login = urllib.parse.urlencode({"csrfmiddlewaretoken": csrf, "username": "demo", "password": "demo"}).encode()
        request = urllib.request.Request(f"{base}/accounts/login/", data=login, headers={"Referer": base + "/"})
        with opener.open(request, timeout=30) as response:  # the README's login: demo / demo
            home = response.read().decode()
            assert response.status == 200 and "/accounts/login/" not in response.url, home[:2000]
        assert "demo" in home
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        output, _ = server.communicate(timeout=30)
    assert f"Serving on http://127.0.0.1:{port}/" in output
