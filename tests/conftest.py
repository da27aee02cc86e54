"""Shared fixtures: reference data, a real browser, small files."""

from __future__ import annotations

import gc
import importlib.util
import itertools
import os
import re
import shutil
from pathlib import Path

import pytest

REFERENCE_DIR = Path(
    os.environ.get("REFERENCE_DIR") or Path(__file__).resolve().parent.parent.parent / "shared" / "reference"
)
# Playwright's sync API runs an event loop in this thread; Django must still allow ORM calls.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture
def reference_dir() -> Path:
    """The studies' reference data beside the checkout; tests that need it skip without it."""
    if not REFERENCE_DIR.is_dir():
        pytest.skip(f"reference data not found at {REFERENCE_DIR}")
    return REFERENCE_DIR


@pytest.fixture(scope="session")
def django_db_modify_db_settings(request) -> None:
    """Under pytest-xdist each worker has a test database of its own: on PostgreSQL
    ``test_<name>_gw0``, ``_gw1``… (pytest-django's suffix); on SQLite the test database is in
    memory, one per worker process already. pytest-django does not know the project's SQLite
    engine (its own backend module, settings.DATABASES) and would turn the suffix into a file named after the dev
    database's path, so it is skipped there."""
    from django.db import connections

    if connections["default"].vendor != "sqlite":
        request.getfixturevalue("django_db_modify_db_settings_parallel_suffix")


def _test_settings(item) -> dict:
    """MD5 for the tests' passwords, set once here: the production hashers cost a tenth of a
    second per user or login, by design. Passwords are still hashed and checked for real.
    Not for the fault tests: their gunicorn is a process of its own, with the production
    hashers, where the annotators they create log in. The tests' fixtures and the rows kept for a
    module (tests/support/kept_state.py) are built under the same settings."""
    if item.get_closest_marker("faults") is None:
        return {"PASSWORD_HASHERS": ["django.contrib.auth.hashers.MD5PasswordHasher"]}
    return {}


@pytest.fixture(autouse=True)
def _fast_password_hasher(request, settings):
    for name, value in _test_settings(request.node).items():
        setattr(settings, name, value)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item) -> None:
    """Before a test's fixtures: the rows kept for its module are those it uses (tests/support/kept_state.py)."""
    from tests.support import kept_state

    kept_state.before_test(item, _test_settings(item))


@pytest.fixture(scope="session", autouse=True)
def _static_files_listed_once():
    """WhiteNoise lists every static file through the finders (about 180 files: their stats, types
    and headers) each time Django builds its middleware, that is once per test client; the files do
    not change during a run, so each worker lists them once for a given configuration (the settings
    that decide which files and which headers) and later middleware take the same entries."""
    from django.conf import settings
    from whitenoise.middleware import WhiteNoiseMiddleware

    original = WhiteNoiseMiddleware.add_files_from_finders
    listed: dict[tuple, dict] = {}

    def add_files_from_finders(self) -> None:
        key = (
            self.static_prefix,
            self.max_age,
            self.charset,
            self.allow_all_origins,
            self.add_headers_function,
            self.index_file,
            tuple(settings.INSTALLED_APPS),
            tuple(map(str, settings.STATICFILES_DIRS)),
            tuple(settings.STATICFILES_FINDERS),
        )
        if key not in listed:
            before = dict(self.files)
            original(self)
            listed[key] = {url: found for url, found in self.files.items() if before.get(url) is not found}
        else:
            self.files.update(listed[key])

    patch = pytest.MonkeyPatch()
    patch.setattr(WhiteNoiseMiddleware, "add_files_from_finders", add_files_from_finders)
    yield
    patch.undo()


@pytest.fixture(scope="session")
def _cache_dirs(tmp_path_factory):
    """The folder of the tests' cache folders, and a counter naming them."""
    return tmp_path_factory.mktemp("caches"), itertools.count()


@pytest.fixture(autouse=True)
def _isolated_cache_dir(settings, _cache_dirs):
    """Every test writes caches and exports under its own temporary directory. (Named by a counter:
    ``mktemp`` lists its folder to number each new one, and a worker makes thousands.)"""
    folder, numbers = _cache_dirs
    settings.CACHE_DIR = folder / str(next(numbers))
    settings.CACHE_DIR.mkdir()


@pytest.fixture(autouse=True)
def _no_throttle_history():
    """Throttles count in the default cache, which outlives a test: each test starts with none
    (every test client comes from 127.0.0.1, so bad tokens in one would throttle the next)."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture(scope="session")
def browser():
    """Debian's chromium driven by Playwright (no browser download: ``executable_path``); Playwright's
    ``expect`` waits on the suite's action clock too (its own default is 5 s)."""
    if not Path(CHROMIUM).exists():
        pytest.skip("chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import expect, sync_playwright

    from tests.browser_jobs import ACTION_MS

    expect.set_options(timeout=ACTION_MS)

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser, live_server):
    """A fresh browser page; ``page.base_url`` is the live server's address. An action has the suite's action
    clock (tests/browser_jobs.py, ``ACTION_MS``); a page load waits for the server's answer, which with the
    inline job runner holds the job a form started, so it has the jobs' deadline, not a clock."""
    from tests.browser_jobs import ACTION_MS, JOB_DEADLINE_MS

    context = browser.new_context(base_url=live_server.url)
    page = context.new_page()
    page.set_default_timeout(ACTION_MS)
    page.set_default_navigation_timeout(JOB_DEADLINE_MS)
    yield page
    context.close()


@pytest.fixture
def login(page, django_user_model):
    """Log a user in through the real login form; returns a function ``login(username, password)``."""

    def _login(username: str, password: str = "pw-secret-123") -> None:
        if not django_user_model.objects.filter(username=username).exists():
            django_user_model.objects.create_user(username=username, password=password)
        page.goto("/accounts/login/")
        page.get_by_label("Username").fill(username)
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_load_state()

    return _login


def pytest_collection_finish(session) -> None:
    """What collecting loaded (Django, the apps, every test module and the libraries they import) lives
    as long as the worker: frozen out of the cyclic collector's passes (``gc.freeze``, as ``manage.py``
    does after ``django.setup()``), so the collections the tests' own garbage sets off walk only that."""
    gc.freeze()


def slow_first(items) -> None:
    """Slow tests first, those against a live server first of all (the stable sort keeps the order within)."""
    items.sort(key=lambda item: (item.get_closest_marker("slow") is None, "live_server" not in item.fixturenames))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (``-n``), slow tests first; ``broker`` tests need a real broker:
    without CELERY_BROKER_URL they are skipped; ``postgresql`` tests are skipped on SQLite. In bin/test's
    database stages (``TEST_STAGE``) each runs its share of the suite (:func:`_leave_to_the_other_stage`).

    Slow first: xdist hands out tests in collection order, so the long ones (the API fuzzing
    alone is over two minutes) start at once on different workers while the others share the
    rest, instead of arriving last (pytest-django puts tests with a live server or a
    transactional database after the others) on a worker that has nothing else left to do.
    Last of the hooks, so that the order holds; the stable sort keeps pytest-django's order
    within the slow tests and within the others, except that the slow ones against a live
    server (the API fuzzing) go first of all.
    """
    if os.environ.get("PYTEST_XDIST_WORKER"):  # the workers' collections are what xdist hands out
        slow_first(items)
    if stage := os.environ.get("TEST_STAGE"):
        _leave_to_the_other_stage(config, items, stage)
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        needs = pytest.mark.skip(reason="needs PostgreSQL (concurrent writers, row locks): bin/test runs it there")
        for item in items:
            if item.get_closest_marker("postgresql"):
                item.add_marker(needs)
    if os.environ.get("CELERY_BROKER_URL"):
        return
    skip = pytest.mark.skip(reason="needs CELERY_BROKER_URL (bin/test starts Redis)")
    for item in items:
        if "broker" in item.keywords:
            item.add_marker(skip)


#: A test module that may reach a database other than through pytest-django's fixtures: its own
#: processes (which inherit DATABASE_URL), the environment, or the settings' databases.
_REACHES_A_DATABASE_ITSELF = re.compile(r"subprocess|Popen|os\.environ|DATABASE|\.vendor")


def _touches_no_database(item) -> bool:
    """Neither pytest-django's database (its marker, the ``db`` fixtures, a live server) nor, as far
    as its module's text tells, any other way to one."""
    if item.get_closest_marker("django_db") is not None:
        return False
    if {"_django_db_helper", "live_server"} & set(item.fixturenames):
        return False
    path = str(item.path)
    if path not in _MODULE_TEXT:
        _MODULE_TEXT[path] = bool(_REACHES_A_DATABASE_ITSELF.search(Path(path).read_text(encoding="utf-8")))
    return not _MODULE_TEXT[path]


_MODULE_TEXT: dict[str, bool] = {}


#: Where bin/test runs a test that uses a database (its key: a folder or file under tests/, or a node
#: id's beginning; the longest key that matches wins; a test no key names runs on both). Each part runs
#: on the database its users run it on: the crowd-facing site (the platforms' arrivals, webhooks and paid
#: actions, the crowd's records, accounts, groups and jobs, under concurrent requests) on PostgreSQL, as a
#: deployment does; the lab's path (pool, machine labels, results, reports, the paper and dataset) on the
#: embedded default, as the demo and a laptop do. Migrations, the upgrade, bulk imports and text limits,
#: where the two differ most, run on both (a data migration's own test on PostgreSQL, the upgrade of a
#: whole earlier database on both); a test marked ``postgresql`` (concurrent writers, row locks)
#: runs on PostgreSQL wherever it lives, and one marked ``embedded`` (its own processes on SQLite) on
#: SQLite. Outside bin/test (no ``TEST_STAGE``) every test runs on the database configured.
DATABASE_STAGE: dict[str, tuple[str, str]] = {
    "tests/platforms/": ("postgresql", "arrivals, webhooks and paid actions come concurrently to a deployed site"),
    "tests/annotation/crowd/": (
        "postgresql",
        "the crowd's bonuses, payments and records, written by concurrent requests",
    ),
    "tests/annotation/crowd/test_answer_counts_kept.py": (
        "sqlite",
        "the answer counts are kept on SQLite only (PostgreSQL counts at each call)",
    ),
    "tests/annotation/test_paid_actions_once.py": ("postgresql", "paid actions started at once, under row locks"),
    "tests/annotation/test_api_sweep.py": (
        "postgresql",
        "every route and method with the values PostgreSQL refuses and SQLite takes (NUL, integers past 64"
        " bits, 1e309, 3,000-character names)",
    ),
    "tests/core/": ("postgresql", "accounts, groups, tokens and jobs: the deployed site's own tables"),
    "tests/core/test_migrations.py": ("both", "each database's migrations, from the originals"),
    "tests/core/test_upgrade.py": ("both", "an earlier main's database upgraded on each database"),
    "tests/core/test_field_limits.py": ("both", "text limits: PostgreSQL enforces them, SQLite does not"),
    "tests/core/test_new_database.py": ("both", "a new database on each"),
    "tests/pooling/": ("sqlite", "pools and named sets a lab builds on its own database"),
    **{
        f"tests/pooling/{name}.py": ("both", "bulk imports: SQLite's variable limit and PostgreSQL's batches differ")
        for name in ("test_imports", "test_run_chunks", "test_scan_chunks", "test_collections_by_reference")
    },
    "tests/pooling/test_services_and_commands.py": ("both", "the import and pool commands on each database"),
    "tests/pooling/test_by_reference_links.py": ("both", "links refused at registration and at each read (issue 82)"),
    "tests/pooling/test_preview_fuzz.py": (
        "sqlite",
        "the import preview parses the upload's first bytes and writes nothing; its one query looks a"
        " collection up by name",
    ),
    "tests/annotation/machine/": ("sqlite", "the machine path a lab runs on its own database"),
    "tests/annotation/results/": ("sqlite", "agreement and review read the lab's answers"),
    "tests/annotation/quality/": ("sqlite", "gold checks and exclusions computed from stored answers"),
    "tests/annotation/exports/": ("sqlite", "the non-gendered set written from stored labels"),
    "tests/annotation/audit/": ("sqlite", "an audit sample a lab draws and labels on its own database"),
    "tests/annotation/test_api_fuzz.py": (
        "sqlite",
        "Schemathesis sends the schema's shapes (types, missing fields), which the serializers answer before"
        " any query; the values PostgreSQL refuses are test_api_sweep.py's",
    ),
    "tests/metrics/": ("sqlite", "reports and their pages, computed from rows read once"),
    "tests/metrics/test_viewer_starts_no_job.py": ("both", "a viewer's GET starts no job, on each database"),
    "tests/publishing/": ("sqlite", "the paper, the dataset and the deposit, written from a report"),
    "tests/publishing/test_doi_reader.py": ("both", "a typed DOI refused before anything is written, on each"),
    "tests/genderbias/": (
        "library",
        "the library's own tests: bin/test's library stage runs them in a venv of `pip install .[test]`, no Django",
    ),
    "tests/test_end_to_end.py": ("sqlite", "the demo's path, on the embedded default as bin/demo runs it"),
    "tests/test_readme_commands.py": ("sqlite", "the README's commands as a newcomer runs them"),
}
STAGES = ("postgresql", "sqlite")
#: The folder bin/test's library stage runs alone, without this file (``--confcutdir tests/genderbias``): the
#: database stages leave it.
LIBRARY_STAGE = "library"


def database_stage(item) -> str:
    """The stage (``postgresql``, ``sqlite`` or ``both``) that runs ``item`` if it uses a database."""
    if item.get_closest_marker("postgresql"):
        return "postgresql"
    if item.get_closest_marker("embedded"):
        return "sqlite"
    keys = [key for key in DATABASE_STAGE if item.nodeid.startswith(key)]
    return DATABASE_STAGE[max(keys, key=len)][0] if keys else "both"


def _leave_to_the_other_stage(config, items, stage: str) -> None:
    """bin/test's two database stages (``TEST_STAGE``) split the suite: a test that touches no database
    (pure computation, the same on any: half the suite, its statistical simulations among them) runs in
    the SQLite stage; one that does runs where :data:`DATABASE_STAGE` says. The library's tests run in
    neither: bin/test's library stage runs them, in a venv without Django."""
    if stage not in STAGES:
        raise pytest.UsageError(f"TEST_STAGE: one of {', '.join(STAGES)}, got {stage!r}")
    gone = [key for key in DATABASE_STAGE if not (config.rootpath / key.split("::")[0].rstrip("/")).exists()]
    if gone:
        raise pytest.UsageError(f"tests/conftest.py DATABASE_STAGE names no test file or folder: {', '.join(gone)}")

    def elsewhere(item) -> bool:
        if database_stage(item) == LIBRARY_STAGE:
            return True
        if _touches_no_database(item):
            return stage == "postgresql"
        return database_stage(item) not in (stage, "both")

    left = [item for item in items if elsewhere(item)]
    if left:
        kept = set(map(id, left))
        config.hook.pytest_deselected(items=left)
        items[:] = [item for item in items if id(item) not in kept]


def _hostile_server():
    """A hostile HTTP server (tests/core/hostile_http.py) on loopback, its ``url`` set, shut after the test."""
    from tests.core.hostile_http import Hostile, serve

    fake = Hostile()
    url, server = serve(fake)
    fake.url = url
    yield fake
    server.shutdown()


#: The outbound client's tests talk to one hostile server, and to a second one where an
#: answer tries to send the client elsewhere (redirects, off-origin "next page" links).
hostile = pytest.fixture(_hostile_server, name="hostile")
elsewhere = pytest.fixture(_hostile_server, name="elsewhere")


@pytest.fixture(autouse=True)
def _prolific_contract():
    """Every Prolific-compatible test server checks calls and answers against Prolific's published
    reference (tests/platforms/prolific/contract.py); what it found in a test fails that test. Without
    the Prolific platform (its folder and tests removed, tests/test_platform_removal.py) there is nothing
    to check."""
    if importlib.util.find_spec("platforms.prolific") is None:
        yield
        return
    from tests.platforms.prolific import contract

    contract.reset()
    yield
    found = contract.reset()
    assert not found, "Prolific's reference (publicapi.yaml) was broken:\n" + "\n".join(dict.fromkeys(found))
