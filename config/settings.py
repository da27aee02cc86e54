"""Settings, read from the environment with types (:mod:`config.env`); a malformed value stops
start-up naming the variable. Secure by default: with ``DJANGO_DEBUG`` off start-up needs
``DJANGO_SECRET_KEY`` and a separate ``WORKER_PSEUDONYM_KEY``, and HTTPS, HSTS and secure cookies
are on. Without ``DATABASE_URL``: SQLite under ``var/``; without ``CELERY_BROKER_URL``: jobs in-process.
"""

import importlib
import importlib.util
import sys
import warnings
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from core.connection_kinds import CHAT_ANSWER_FORMAT_DEFAULT, CHAT_API_URL_DEFAULT, CHAT_TOKEN_LIMIT_DEFAULT

from .env import (
    env_bool,
    env_choice,
    env_decimal,
    env_float,
    env_int,
    env_list,
    env_path,
    env_paths,
    env_str,
    help_only,
)

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = env_path("VAR_DIR", BASE_DIR / "var")

#: Where derived artefacts live: collection docid indexes, magnitude caches, exports, plots.
CACHE_DIR = VAR_DIR / "cache"

DEBUG = env_bool("DJANGO_DEBUG", False)
_DEVELOPMENT_KEY = "dev-only-insecure-key-change-me-in-production"
#: ``manage.py help`` and every ``--help`` print text and serve nothing: they work without the
#: production secrets (placeholders, never used to sign anything); everything else is refused.
_HELP_ONLY = help_only(sys.argv)
SECRET_KEY = env_str("DJANGO_SECRET_KEY", _DEVELOPMENT_KEY if DEBUG else "")
#: Key of the HMAC pseudonyms workers appear under in pages and exports. Set it once and keep
#: it (a new key gives everyone new pseudonyms); it must differ from SECRET_KEY, which is
#: rotated for other reasons and must not let anyone who knows it recompute pseudonyms.
WORKER_PSEUDONYM_KEY = env_str("WORKER_PSEUDONYM_KEY", "dev-only-pseudonym-key" if DEBUG else "")
if not DEBUG and _HELP_ONLY:
    SECRET_KEY = SECRET_KEY or "help-only-placeholder-secret-key"
    WORKER_PSEUDONYM_KEY = WORKER_PSEUDONYM_KEY or "help-only-placeholder-pseudonym-key"
if not DEBUG:
    missing = [
        name
        for name, value in (("DJANGO_SECRET_KEY", SECRET_KEY), ("WORKER_PSEUDONYM_KEY", WORKER_PSEUDONYM_KEY))
        if not value
    ]
    if missing:
        raise ImproperlyConfigured(
            f"{' and '.join(missing)} must be set when DJANGO_DEBUG is off (production). "
            "Generate each with: python -c 'import secrets; print(secrets.token_urlsafe(50))'. "
            "For a local try-out, run bin/demo or set DJANGO_DEBUG=1."
        )
    if WORKER_PSEUDONYM_KEY == SECRET_KEY:
        raise ImproperlyConfigured("WORKER_PSEUDONYM_KEY must differ from DJANGO_SECRET_KEY")
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

# --- HTTPS and cookies (on whenever debug is off; each relaxable) ------------------------------
#: Behind one TLS-terminating proxy that sets X-Forwarded-Proto and X-Forwarded-For: trust the
#: first to mark requests secure, and the last address of the second as the client's
#: (core.web.client_ip; login and API throttling key on it). Off: both headers are ignored.
BEHIND_TLS_PROXY = env_bool("DJANGO_BEHIND_TLS_PROXY", False)
if BEHIND_TLS_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", not DEBUG)
SESSION_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES", not DEBUG)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 0 if DEBUG else 31_536_000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", not DEBUG)
SECURE_HSTS_PRELOAD = env_bool("DJANGO_SECURE_HSTS_PRELOAD", not DEBUG)
SESSION_COOKIE_HTTPONLY = True
# Django's database sessions, read with the session's account in one statement (core.web.sessions).
SESSION_ENGINE = "annotation.accounts"
X_FRAME_OPTIONS = "DENY"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "core",
    "pooling",
    "annotation",
    # The crowd platforms, one line each (platforms/<name>/: a Django app; removing a line and its
    # folder removes the platform, docs/architecture.md).
    "platforms.inhouse",
    "platforms.mturk",
    "platforms.prolific",
    "platforms.taskbuilder",
    "metrics",
    "publishing",  # above metrics: the dataset, the paper bundle, checklists, methods text, bibliography
    "benchmarks",  # commands only: benchmark_cycle, benchmark_load, benchmark_pooling, benchmark_scan, benchmark_metrics
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Before anything looks a name up: PostgreSQL cannot hold NUL, so %00 would be a 500.
    "core.web.middleware.refuse_nul_characters",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    # Django's, taking the user read with the session when it was (core.web.sessions).
    "core.web.middleware.AuthenticationMiddleware",
    # Every study model read or made within the user's research groups (docs/deployment.md).
    "core.web.middleware.group_scope",
    "django.contrib.messages.middleware.MessageMiddleware",
    # An empty 405 (require_POST) becomes a page saying which methods the address takes.
    "core.web.middleware.explain_wrong_methods",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: it turns a lock-out into the "locked out" response.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "config.wsgi.application"

_SQLITE_DEFAULT = f"sqlite:///{VAR_DIR / 'db.sqlite3'}"
# Connections kept open (0: a PostgreSQL backend's start-up per request; docs/benchmarks.md, "The
# annotator's path"); one broken by a database restart is replaced before use (CONN_HEALTH_CHECKS).
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", _SQLITE_DEFAULT),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60, minimum=0),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    #: Django's backend, creating the database's folder when it first opens the file (core.db.sqlite).
    DATABASES["default"]["ENGINE"] = "core.db.sqlite"
    # WAL: the site reads while a command writes; IMMEDIATE: two writers queue on the busy timeout
    # instead of failing mid-transaction; synchronous=NORMAL: a power loss may lose the last commits,
    # never corrupt the file (measured in docs/benchmarks.md, "The annotator's path").
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }

elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Prepared statements: every annotator request's statements planned once per connection
    # (docs/benchmarks.md, "The annotator's path"). Behind a transaction-mode pooler (PgBouncer
    # before 1.21) set DATABASE_PREPARE_THRESHOLD=0.
    _prepare_threshold = env_int("DATABASE_PREPARE_THRESHOLD", 5, minimum=0)
    if _prepare_threshold:
        DATABASES["default"]["OPTIONS"] = {"server_side_binding": True, "prepare_threshold": _prepare_threshold}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# --- Mail (password reset) -----------------------------------------------------------------
#: Password reset by e-mail only with a mail server: a reset that never arrives is worse than none.
EMAIL_HOST = env_str("EMAIL_HOST", "")
PASSWORD_RESET_BY_EMAIL = bool(EMAIL_HOST)
if PASSWORD_RESET_BY_EMAIL:
    EMAIL_PORT = env_int("EMAIL_PORT", 587, minimum=1)
    EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
    EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
    EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", True)
    DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", f"genderbias@{EMAIL_HOST}")

# --- Login throttling (django-axes) -----------------------------------------------------
#: After this many wrong passwords for one username from one address (core.web.client_ip: never a
#: header a client sets), that pair is locked out for AXES_COOLOFF_TIME hours.
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = env_float("AXES_COOLOFF_HOURS", 1.0, minimum=0.01)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_CLIENT_IP_CALLABLE = "core.web.client_ip.client_ip"
AXES_RESET_ON_SUCCESS = True
#: Django's model backend, but a session also ends for good when its account's rights change (annotation.accounts).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "annotation.accounts.AccountBackend",
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "static"
#: Until ``collectstatic`` fills STATIC_ROOT, files are served from the apps (finders): the
#: folder's absence is expected, not worth a warning at every start.
warnings.filterwarnings("ignore", message="No directory at", category=UserWarning)
#: Serve static files straight from the apps in development; production runs collectstatic.
WHITENOISE_USE_FINDERS = True
STATICFILES_DIRS = [BASE_DIR / "static"]

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

# --- Imports from the site ---------------------------------------------------------------
#: Folders whose files researchers may register by path (os.pathsep-separated); empty: none.
IMPORT_ROOTS = env_paths("IMPORT_ROOTS")
#: Largest file accepted as an upload (bytes); larger ones are registered by path instead.
IMPORT_UPLOAD_MAX_BYTES = env_int("IMPORT_UPLOAD_MAX_BYTES", 2 * 1024**3, minimum=1)

# --- Input limits (genderbias.files.textfiles; docs/deployment.md, "Input limits") ----------------------
#: The most bytes a collection or run may expand to once decompressed (a plain file: its
#: size); those readers stream, so this bounds work and disk, not memory.
IMPORT_MAX_DECOMPRESSED_BYTES = env_int("IMPORT_MAX_DECOMPRESSED_BYTES", 32 * 1024**3, minimum=1)
#: The most a file read whole into memory may hold: query, qrels and word-list files, gold,
#: training and labelled files (the trained labeller's). Each line counts its bytes and the
#: Python objects it becomes (genderbias.files.textfiles.HELD_LINE_BYTES), so this bounds
#: what an import holds in a worker's memory (the factor measured: docs/deployment.md).
IMPORT_MAX_HELD_BYTES = env_int("IMPORT_MAX_HELD_BYTES", 512 * 1024**2, minimum=1)
#: How many times its compressed size a gzip file may expand (every reader, site and command
#: line), checked while decompressing past its first IMPORT_EXPANSION_FREE_BYTES: text
#: compresses 3-10 times, a compression bomb (2 MB of one repeated line, 2 GiB expanded)
#: a thousand, and is refused after a few megabytes, at flat memory.
IMPORT_MAX_EXPANSION_RATIO = env_int("IMPORT_MAX_EXPANSION_RATIO", 100, minimum=2)
IMPORT_EXPANSION_FREE_BYTES = env_int("IMPORT_EXPANSION_FREE_BYTES", 4 * 1024**2, minimum=0)

# --- Celery ---------------------------------------------------------------------------
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "")
# Without a broker, Jobs run in the process that commits them (core.jobs.in_process) ...
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
#: ... on this many background threads per process ("threads": a request answers at once), or
#: "inline", in the committing thread (the test suite). manage.py commands always run them inline.
#: "inline" also checks Prolific arrivals in the request's own thread (platforms.prolific.services).
JOB_LOCAL_RUNNER = env_choice("JOB_LOCAL_RUNNER", "threads", ("threads", "inline"))
JOB_LOCAL_THREADS = env_int("JOB_LOCAL_THREADS", 2, minimum=1)
#: Jobs a request may have in flight (pending or running) per user and per research group: one
#: more is refused with a 429 naming the bound (core.jobs.admit). Jobs started by commands and by
#: other jobs are not counted (an operator's, not a visitor's). Where jobs wait (the background
#: threads above), the next one is taken from each group in turn (core.jobs.in_process).
JOB_MAX_IN_FLIGHT_PER_USER = env_int("JOB_MAX_IN_FLIGHT_PER_USER", 8, minimum=1)
JOB_MAX_IN_FLIGHT_PER_GROUP = env_int("JOB_MAX_IN_FLIGHT_PER_GROUP", 16, minimum=1)
CELERY_TASK_EAGER_PROPAGATES = True
# At-least-once delivery, a second one harmless (core.tasks): acknowledged after the task ran, put
# back when its worker is killed, one message reserved at a time.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600, minimum=1)}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
# A broker blip does not cancel running jobs; if their acknowledgement is lost, the
# redelivery finds the job done and does nothing.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
#: A running job's worker stamps Job.heartbeat this often (seconds) ...
JOB_HEARTBEAT_SECONDS = env_float("JOB_HEARTBEAT_SECONDS", 10, minimum=0.1)
#: ... and is taken for gone when it has not for this long: another delivery may take the job over.
JOB_LEASE_SECONDS = env_float("JOB_LEASE_SECONDS", 60, minimum=0.1)
#: The sweeper sends a pending job again when no broker holds its message this long after it was sent.
JOB_SWEEP_AFTER_SECONDS = env_float("JOB_SWEEP_AFTER_SECONDS", 120, minimum=0.1)
#: A job whose worker died (killed by the system, perhaps for memory) is carried out at most this many
#: times; found abandoned after its last attempt, it is recorded failed with the reason, not sent again
#: (core.tasks.fail_exhausted): a job that kills its worker would otherwise kill one after another.
JOB_MAX_ATTEMPTS = env_int("JOB_MAX_ATTEMPTS", 3, minimum=1)
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_BACKEND = None

# --- REST framework -------------------------------------------------------------------
#: Sessions for the site's pages, hashed tokens (core.services.api_tokens) for scripts; no Basic auth
#: (a password on every request, and django-axes' backend needs the request DRF's Basic auth does not
#: pass). A client whose token headers failed this many times in a minute gets 429 (per process).
API_TOKEN_FAILURES_PER_MINUTE = env_int("API_TOKEN_FAILURES_PER_MINUTE", 10, minimum=1)
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "core.services.api_tokens.TokenAuthentication",
    ],
    "DEFAULT_THROTTLE_RATES": {"bad_api_token": f"{API_TOKEN_FAILURES_PER_MINUTE}/min"},
    "EXCEPTION_HANDLER": "core.api.exception_handler",
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 100,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Gender-bias query sets API",
    "DESCRIPTION": "Pools, annotation batches, judgments, agreement, exports and bias reports.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema and its viewers are for researchers, like the endpoints they describe.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAdminUser"],
    # Swagger UI and ReDoc from vendored files (drf-spectacular-sidecar), never a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # ReDoc's own default fonts come from Google; the page (templates/core/redoc.html) links
    # none and ReDoc uses the system's fonts, so it loads nothing from the internet.
    "REDOC_UI_SETTINGS": {
        "theme": {
            "typography": {
                "fontFamily": 'system-ui, -apple-system, "Segoe UI", sans-serif',
                "headings": {"fontFamily": 'system-ui, -apple-system, "Segoe UI", sans-serif'},
                "code": {"fontFamily": "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace"},
            }
        }
    },
    # One name per set of choices that several components share.
    "ENUM_NAME_OVERRIDES": {"JobStatusEnum": "core.models.Job.Status"},
}

# --- Caches ---------------------------------------------------------------------------
#: ``default``: per process (API throttling counts). Two caches every worker shares, each in its own
#: table (made by ``migrate``) unless on Redis, so that culling the results never touches the arrivals':
#: ``shared`` (SHARED_CACHE_URL or table ``shared_cache``): Prolific arrivals' counters and checks, the
#: pace of Prolific calls (core.services.ratelimit); ``results`` (RESULTS_CACHE_URL or table
#: ``results_cache``, never the broker's Redis): what a batch's answers add up to, keyed by its answer
#: version (annotation.results.selectors.labels.answers_version). RESULTS_CACHE_SECONDS=0 caches nothing.


def _redis_url(name: str) -> str:
    """The environment's ``name``: empty, or a Redis address (else a clear refusal naming it)."""
    url = env_str(name, "")
    if url and not url.startswith(("redis://", "rediss://", "unix://")):
        raise ImproperlyConfigured(f"{name}={url!r}: expected redis://, rediss:// or unix://")
    return url


SHARED_CACHE_URL = _redis_url("SHARED_CACHE_URL")
#: How long a cached result is kept (seconds); a new answer makes a new key at once anyway.
RESULTS_CACHE_SECONDS = env_int("RESULTS_CACHE_SECONDS", 7 * 24 * 3600, minimum=0)
#: The most the results cache holds (bytes, pickled; core.db.bounded_cache): past it, the oldest go.
RESULTS_CACHE_MAX_BYTES = env_int("RESULTS_CACHE_MAX_BYTES", 256 * 1024**2, minimum=1024)
#: A Redis of its own for the results cache (with ``maxmemory-policy allkeys-lru``: docs/deployment.md).
RESULTS_CACHE_URL = _redis_url("RESULTS_CACHE_URL")
#: The most the report figures' files under CACHE_DIR/plots may hold (bytes; the paper bundles'
#: zips too): past it the least recently drawn go (metrics.services.plot_cache), drawn again if asked.
PLOT_CACHE_MAX_BYTES = env_int("PLOT_CACHE_MAX_BYTES", 512 * 1024**2, minimum=1024)
#: The most the reports' per-query CSV files under CACHE_DIR/per-query may hold (bytes; docs/deployment.md):
#: past it the least recently written go, written again by a job if asked.
PER_QUERY_CACHE_MAX_BYTES = env_int("PER_QUERY_CACHE_MAX_BYTES", 4 * 1024**3, minimum=1024)


def _cache(url: str, table: str) -> dict:
    """Redis at ``url``, or the database table ``table`` (a database cache culls a third of its table
    past MAX_ENTRIES: one table per cache keeps one cache's load from culling the other's entries)."""
    if url:
        return {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url}
    return {
        "BACKEND": "django.core.cache.backends.db.DatabaseCache",
        "LOCATION": table,
        "OPTIONS": {"MAX_ENTRIES": 100_000},
    }


CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "shared": _cache(SHARED_CACHE_URL, "shared_cache") | {"KEY_PREFIX": "shared"},
    "results": (
        _cache(RESULTS_CACHE_URL, "results_cache") | {"TIMEOUT": RESULTS_CACHE_SECONDS, "KEY_PREFIX": "results"}
        if RESULTS_CACHE_SECONDS
        else {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}
    ),
}

# --- Agreement ------------------------------------------------------------------------
#: Bootstrap resamples behind every 95% CI of Krippendorff's alpha (command, data card,
#: page, API), shown beside the interval; 0 skips the interval.
AGREEMENT_BOOTSTRAP_RESAMPLES = env_int("AGREEMENT_BOOTSTRAP_RESAMPLES", 1000, minimum=0)

# --- Connections set on the site (core.connection_kinds; docs/deployment.md, "Connections") ---------
#: The Fernet key(s) sealing the secrets stored on the site's Connections page: one key, or
#: NEW,OLD while rotating (``manage.py connections --rotate``). Unset: secrets cannot be stored on
#: the site (environment variables still work). An environment variable of a connection's field,
#: when set, takes precedence over the value stored on the site.
CONNECTIONS_KEY = env_str("CONNECTIONS_KEY", "")
#: Seconds a connection test waits for each answer (twice that in all).
CONNECTION_TEST_TIMEOUT = env_float("CONNECTION_TEST_TIMEOUT", 10.0, minimum=0.1)

# --- Annotators' corrections (platforms.inhouse.services.corrections) -------------------
#: How long after submitting a HIT its annotator may still correct it (while none of its
#: answers has been used); 0 turns corrections off.
ANSWER_CORRECTION_SECONDS = env_int("ANSWER_CORRECTION_SECONDS", 600, minimum=0)

# --- The crowd platforms' own settings ----------------------------------------------------------
#: Each crowd platform reads its settings from the environment in ``platforms/<name>/settings.py``; its
#: INSTALLED_APPS line brings them here, and removing the line removes them.
for _app in INSTALLED_APPS:
    if _app.startswith("platforms.") and importlib.util.find_spec(f"{_app}.settings") is not None:
        globals().update(
            {name: value for name, value in vars(importlib.import_module(f"{_app}.settings")).items() if name.isupper()}
        )

# --- Bonuses and the study link ---------------------------------------------------------------
#: The most one participant may earn in bonuses from one batch (USD): a bonus rule under which
#: anyone could earn more is refused when set, as a likely typo (annotation.crowd.bonus_rules).
BONUS_MAX_PER_PARTICIPANT_USD = env_decimal("BONUS_MAX_PER_PARTICIPANT_USD", "100")
#: This site's public base URL: the study URL participants open is built from it.
SITE_URL = env_str("SITE_URL", "http://localhost:8000")


# --- Pre-labelling (annotation.machine.prelabellers.openai_chat) ---------------------------------
#: Any OpenAI-compatible chat-completions endpoint (its base, ``.../v1/``); the key is sent
#: as ``Authorization: Bearer ...`` (empty: no header, e.g. a local server).
PRELABEL_API_URL = env_str("PRELABEL_API_URL", CHAT_API_URL_DEFAULT)
PRELABEL_API_KEY = env_str("PRELABEL_API_KEY", "")
PRELABEL_MODEL = env_str("PRELABEL_MODEL", "")
#: The request field that caps each answer's length: max_tokens (llama.cpp, vLLM, most servers) or
#: max_completion_tokens (OpenAI's reasoning models); a 400 naming the other switches to it.
PRELABEL_TOKEN_LIMIT_FIELD = env_str("PRELABEL_TOKEN_LIMIT_FIELD", CHAT_TOKEN_LIMIT_DEFAULT)
#: How each answer is asked to be written: text, json_schema (structured outputs) or json_object
#: (with a schema: llama-cpp-python's server); docs/prelabelling.md, "Structured answers".
PRELABEL_ANSWER_FORMAT = env_str("PRELABEL_ANSWER_FORMAT", CHAT_ANSWER_FORMAT_DEFAULT)
#: The cap itself: the most tokens one answer may take (a label takes a few).
PRELABEL_MAX_ANSWER_TOKENS = env_int("PRELABEL_MAX_ANSWER_TOKENS", 16, minimum=1, maximum=4096)
#: A prompt of your own for the chat labeller: the system prompt, a line ``---``, then the user
#: template with ``{query}``; versioned by its text (empty: the built-in, versioned prompt).
PRELABEL_PROMPT_FILE = env_str("PRELABEL_PROMPT_FILE", "")
#: Answers first sampled per query, at this temperature (one call: ``n``). A query whose answers
#: came without log-probabilities is then drawn up to PRELABEL_MAX_SAMPLES, within
#: PRELABEL_SAMPLE_BUDGET answers per query on average (docs/prelabelling.md: the confidence).
PRELABEL_SAMPLES = env_int("PRELABEL_SAMPLES", 3, minimum=1)
PRELABEL_MAX_SAMPLES = env_int("PRELABEL_MAX_SAMPLES", 16, minimum=1)
PRELABEL_SAMPLE_BUDGET = env_float("PRELABEL_SAMPLE_BUDGET", 16.0, minimum=1.0)
#: Alternatives asked for at each answer token (``logprobs``/``top_logprobs``; 0: not asked).
PRELABEL_TOP_LOGPROBS = env_int("PRELABEL_TOP_LOGPROBS", 5, minimum=0, maximum=20)
PRELABEL_TEMPERATURE = env_float("PRELABEL_TEMPERATURE", 1.0, minimum=0.01)
#: Calls in flight at once.
PRELABEL_CONCURRENCY = env_int("PRELABEL_CONCURRENCY", 4, minimum=1)
#: USD per million prompt and completion tokens (0: cost not known; tokens are recorded anyway).
PRELABEL_PROMPT_PRICE = env_decimal("PRELABEL_PROMPT_PRICE", "0")
PRELABEL_COMPLETION_PRICE = env_decimal("PRELABEL_COMPLETION_PRICE", "0")

# --- Outbound calls: deadlines, sizes, circuit breaker (core.http; docs/deployment.md) ----
#: The chat endpoint: seconds for each connect and read, seconds for one query in all
#: (retries and back-off included), attempts per call, and the largest answer read (bytes).
PRELABEL_TIMEOUT = env_float("PRELABEL_TIMEOUT", 60.0, minimum=0.1)
PRELABEL_CALL_DEADLINE = env_float("PRELABEL_CALL_DEADLINE", 300.0, minimum=0.1)
PRELABEL_MAX_ATTEMPTS = env_int("PRELABEL_MAX_ATTEMPTS", 6, minimum=1)
PRELABEL_MAX_RESPONSE_BYTES = env_int("PRELABEL_MAX_RESPONSE_BYTES", 1_000_000, minimum=1024)
#: Seconds one pre-labelling job may spend asking the endpoint; then it stops, keeping its labels.
PRELABEL_JOB_DEADLINE = env_float("PRELABEL_JOB_DEADLINE", 7200.0, minimum=1.0)
#: The circuit breaker: the job stops after this many failed queries in a row, or once this
#: share of its queries failed (counted from 10 queries on).
PRELABEL_MAX_CONSECUTIVE_FAILURES = env_int("PRELABEL_MAX_CONSECUTIVE_FAILURES", 5, minimum=1)
PRELABEL_MAX_FAILURE_SHARE = env_float("PRELABEL_MAX_FAILURE_SHARE", 0.25, minimum=0.01, maximum=1.0)
#: An answer longer than this (characters) is cached as the label it names, not as itself.
PRELABEL_MAX_ANSWER_CHARS = env_int("PRELABEL_MAX_ANSWER_CHARS", 200, minimum=16)


LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # A 403 is logged as one line, without the traceback of its PermissionDenied (core.logfilters).
    "filters": {"one_line_forbidden": {"()": "core.logfilters.OneLineForbidden"}},
    "loggers": {"django.request": {"filters": ["one_line_forbidden"]}},
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {
        "handlers": ["console"],
        "level": env_choice("LOG_LEVEL", "WARNING", ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")),
    },
}
