"""Settings, read from the environment.

Nothing needs configuring to run: without ``DATABASE_URL`` the project uses an
SQLite file under ``var/`` (WAL, IMMEDIATE transactions, a busy timeout), and
without ``CELERY_BROKER_URL`` Celery tasks run eagerly in-process. Production
sets ``DATABASE_URL=postgres://...`` and ``CELERY_BROKER_URL=redis://...``.
"""

import os
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)

#: Where derived artefacts live: collection docid indexes, magnitude caches, exports, plots.
CACHE_DIR = VAR_DIR / "cache"


def _env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


DEBUG = _env_bool("DJANGO_DEBUG", True)
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "dev-only-insecure-key-change-me-in-production")
ALLOWED_HOSTS = [h for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]").split(",") if h]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "core",
    "pooling",
    "annotation",
    "metrics",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
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
# A connection broken by a database restart is noticed before use and replaced
# (CONN_HEALTH_CHECKS), so the site and the workers recover without being restarted.
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", _SQLITE_DEFAULT),
        conn_max_age=int(os.environ.get("DATABASE_CONN_MAX_AGE", "0")),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the site read while a command writes; IMMEDIATE takes the write lock at
    # BEGIN so two writers queue on the busy timeout instead of failing mid-transaction.
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
#: Serve static files straight from the apps in development; production runs collectstatic.
WHITENOISE_USE_FINDERS = True
STATICFILES_DIRS = [BASE_DIR / "static"]

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

# --- Celery ---------------------------------------------------------------------------
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
# At-least-once delivery (core.tasks makes a second delivery harmless): a message is
# acknowledged after its task ran; a worker process killed mid-task puts it back at once;
# Redis hands an unacknowledged message out again after the visibility timeout; a worker
# reserves one message at a time.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": int(os.environ.get("CELERY_VISIBILITY_TIMEOUT", "3600"))}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
# A broker blip does not cancel running jobs; if their acknowledgement is lost, the
# redelivery finds the job done and does nothing.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
#: A running job's worker stamps Job.heartbeat this often (seconds) ...
JOB_HEARTBEAT_SECONDS = float(os.environ.get("JOB_HEARTBEAT_SECONDS", "10"))
#: ... and is taken for gone when it has not for this long: another delivery may take the job over.
JOB_LEASE_SECONDS = float(os.environ.get("JOB_LEASE_SECONDS", "60"))
#: The sweeper sends a pending job again when no broker holds its message this long after it was sent.
JOB_SWEEP_AFTER_SECONDS = float(os.environ.get("JOB_SWEEP_AFTER_SECONDS", "120"))
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_BACKEND = None

# --- REST framework -------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.BasicAuthentication",
    ],
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
}

# --- Mechanical Turk ------------------------------------------------------------------
#: Any MTurk-compatible server; empty means AWS's sandbox, or production with MTURK_LIVE=1.
MTURK_ENDPOINT_URL = os.environ.get("MTURK_ENDPOINT_URL", "")
MTURK_LIVE = _env_bool("MTURK_LIVE")
#: Where HIT forms post answers; empty means the worker site matching the endpoint.
MTURK_SUBMIT_URL = os.environ.get("MTURK_SUBMIT_URL", "")
#: Client-side ceiling on MTurk calls per second (MTurk throttles bursts).
MTURK_MAX_CALLS_PER_SECOND = float(os.environ.get("MTURK_MAX_CALLS_PER_SECOND", "5"))
#: Key for worker pseudonyms (HMAC); defaults to one derived from SECRET_KEY.
WORKER_PSEUDONYM_KEY = os.environ.get("WORKER_PSEUDONYM_KEY", SECRET_KEY)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}
