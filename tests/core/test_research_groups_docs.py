"""Two labs set up exactly as docs/deployment.md says, on a site of its own (issue 53, item 1).

The commands are read from the ```sh block under "Research groups: setting up labs" and run as
processes, word for word, in the checkout (after ``migrate``, which "The application" runs
first); the owners' passwords are read from what the command prints. Then a real server
(``manage.py runserver``) is driven over HTTP as the section's text says: each owner logs in,
finds *Groups* in the navigation, adds a researcher and an annotator there (the passwords read
from the page, shown once); each lab's researcher imports a query set and creates a batch
through the API; each lab sees and acts on its own work only. No step uses createsuperuser or
/admin/.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from http.cookiejar import CookieJar
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
DOCS = ROOT / "docs" / "deployment.md"
SECTION = "## Research groups: setting up labs"


def documented_commands() -> list[list[str]]:
    """The shell words of every line of the section's ```sh block (comments dropped)."""
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index(SECTION) :]
    block = section[section.index("```sh\n") + 6 :]
    block = block[: block.index("```")]
    return [words for line in block.splitlines() if (words := shlex.split(line, comments=True))]


def test_the_docs_set_labs_up_without_superuser_or_admin():
    commands = documented_commands()
    assert [w[:4] for w in commands][:2] == [[".venv/bin/python", "manage.py", "research_group", "--create"]] * 2
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index(SECTION) : text.index("## Research groups: who may do what")]
    assert "createsuperuser" not in " ".join(" ".join(w) for w in commands)
    assert "/groups/" in section


class Site:
    """A browser's session with the server: cookies, the CSRF token, JSON and form posts."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.cookies = CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.cookies))

    def _open(self, request: urllib.request.Request) -> tuple[int, str]:
        try:
            with self.opener.open(request, timeout=60) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def get(self, path: str) -> tuple[int, str]:
        return self._open(urllib.request.Request(self.base + path))

    def csrf(self) -> str:
        return next(c.value for c in self.cookies if c.name == "csrftoken")

    def post_form(self, path: str, fields: dict) -> tuple[int, str]:
        page = self.get(path)[1]
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        body = urllib.parse.urlencode({"csrfmiddlewaretoken": token, **fields}).encode()
        return self._open(urllib.request.Request(self.base + path, data=body, headers={"Referer": self.base + "/"}))

    def post(self, path: str, body: dict | None = None, *, files: dict | None = None) -> tuple[int, dict]:
        headers = {"X-CSRFToken": self.csrf(), "Referer": self.base + "/"}
        if files:
            boundary = "----docs-test-boundary"
            parts = []
            for name, value in (body or {}).items():
                parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n')
            for name, (filename, content) in files.items():
                parts.append(
                    f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
                    f"Content-Type: text/plain\r\n\r\n{content}\r\n"
                )
            data = ("".join(parts) + f"--{boundary}--\r\n").encode()
            headers["Content-Type"] = f"multipart/form-data; boundary={boundary}"
        else:
            data = json.dumps(body or {}).encode()
            headers["Content-Type"] = "application/json"
        status, text = self._open(urllib.request.Request(self.base + path, data=data, headers=headers))
        return status, (json.loads(text) if text.startswith("{") else {"text": text})

    def log_in(self, username: str, password: str) -> None:
        status, page = self.post_form("/accounts/login/", {"username": username, "password": password})
        assert status == 200 and 'name="password"' not in page, f"{username} could not log in"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _add_on_groups_page(owner: Site, slug: str, username: str, role: str) -> str:
    status, page = owner.post_form("/groups/", {"group": slug, "action": "set", "username": username, "role": role})
    assert status == 200, page[:2000]
    found = re.search(r'<code id="new-password">([^<]+)</code>', page)
    assert found, f"no password shown for {username}: {page[:3000]}"
    return found.group(1)


def _wait_for_job(site: Site, job: dict) -> None:
    for _ in range(240):
        _, text = site.get(f"/api/jobs/{job['id']}/")
        state = json.loads(text)
        if state["status"] in ("done", "failed"):
            assert state["status"] == "done", state
            return
        time.sleep(0.25)
    raise AssertionError(f"job {job} did not finish")


@pytest.mark.slow
@pytest.mark.embedded
def test_two_labs_set_up_as_the_docs_say_see_and_act_on_their_own_work_only(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    env.update(VAR_DIR=str(tmp_path / "var"), DJANGO_DEBUG="1", MANAGE_RESIDENT="off")
    python = str(ROOT / ".venv" / "bin" / "python")
    if not Path(python).exists():
        python = sys.executable

    def run(words: list[str]) -> str:
        done = subprocess.run(words, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, f"{' '.join(words)}: {done.stdout[-2000:]}{done.stderr[-3000:]}"
        return done.stdout

    run([python, "manage.py", "migrate", "--noinput", "-v0"])  # "The application" section, before this one
    passwords, slugs = {}, {}
    for words in documented_commands():
        out = run(words)  # exactly as printed in the docs
        if "--create" in words:
            owner = words[words.index("--owner") + 1]
            passwords[owner] = re.search(r"password: (\S+)", out).group(1)
            slugs[owner] = re.search(r"Made research group .* \(([\w-]+)\)", out).group(1)
    listing = out
    assert set(passwords) == {"alice", "bob"} and "alice\towner" in listing and "bob\towner" in listing

    port = _free_port()
    server = subprocess.Popen(
        [python, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):
            try:
                urllib.request.urlopen(base + "/accounts/login/", timeout=5).read()
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.5)
        labs = {}
        for owner, lab in (("alice", "a"), ("bob", "b")):
            site = Site(base)
            site.log_in(owner, passwords[owner])
            home = site.get("/")[1]
            assert 'href="/groups/"' in home  # the navigation links the groups page
            researcher = _add_on_groups_page(site, slugs[owner], f"res-{lab}", "researcher")
            annotator = _add_on_groups_page(site, slugs[owner], f"ann-{lab}", "annotator")
            labs[lab] = {"owner": site, "researcher": researcher, "annotator": annotator}
        for lab, made in labs.items():
            site = Site(base)
            site.log_in(f"res-{lab}", made["researcher"])
            queries = "".join(f"{lab}{i}\tlab {lab} secret query {i} about her\n" for i in range(4))
            status, job = site.post(
                "/api/pooling/imports/queries/", {"name": f"queries-{lab}"}, files={"file": ("q.tsv", queries)}
            )
            assert status == 202, job
            _wait_for_job(site, job)
            status, batch = site.post(
                "/api/annotation/batches/",
                {"name": f"batch-{lab}", "queries": f"queries-{lab}", "provider": "local", "reward": "0.05"},
            )
            assert status == 201, batch
            made["site"] = site
        for lab, other in (("a", "b"), ("b", "a")):
            site = labs[lab]["site"]
            listed = json.loads(site.get("/api/annotation/batches/")[1])
            assert [b["name"] for b in listed["results"]] == [f"batch-{lab}"]
            status, text = site.get(f"/api/annotation/batches/batch-{other}/")
            assert status == 404, text[:500]
            assert f"lab {other} secret" not in site.get("/api/pooling/query-sets/")[1]
            assert site.post(f"/api/annotation/batches/batch-{other}/cancel/")[0] == 404
            # The owner of one lab cannot take the other's annotator over.
            owner = labs[lab]["owner"]
            status, _ = owner.post(f"/api/annotation/annotators/ann-{other}/reset-password/", {"access": "password"})
            assert status in (403, 404)
            status, _ = owner.post_form(
                "/groups/", {"group": slugs["alice" if other == "a" else "bob"], "action": "set", "username": "x"}
            )
            assert status == 404
        for lab in labs:  # each acts on its own work
            status, answer = labs[lab]["site"].post(f"/api/annotation/batches/batch-{lab}/cancel/")
            assert status < 300, answer
        # Nothing of one lab changed the other's members (the listing, read as the operator).
        final = run([python, "manage.py", "research_group"])
        members = dict(re.findall(r"^  (\S+)\t(\w+)$", final, flags=re.M))
        assert members == {
            "alice": "owner",
            "res-a": "researcher",
            "ann-a": "annotator",
            "bob": "owner",
            "res-b": "researcher",
            "ann-b": "annotator",
        }
        groups = re.findall(r"^(\S+)\t", final, flags=re.M)
        assert groups == [slugs["alice"], slugs["bob"]]
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.communicate(timeout=30)
