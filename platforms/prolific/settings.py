"""Prolific's settings, read from the environment (docs/deployment.md lists them): installing the
platform (its line in ``INSTALLED_APPS``) puts them in Django's settings (``config/settings.py``)."""

from config.env import env_bool, env_decimal, env_float, env_int, env_str
from platforms.prolific.connection.kind import PROLIFIC_API_URL_DEFAULT

# --- Prolific -------------------------------------------------------------------------
#: Prolific's API (or any server speaking it); the token is sent as ``Authorization: Token ...``.
PROLIFIC_API_URL = env_str("PROLIFIC_API_URL", PROLIFIC_API_URL_DEFAULT)
PROLIFIC_API_TOKEN = env_str("PROLIFIC_API_TOKEN", "")
#: The Prolific project that holds the studies of this site, and its workspace (participant groups).
PROLIFIC_PROJECT_ID = env_str("PROLIFIC_PROJECT_ID", "")
PROLIFIC_WORKSPACE_ID = env_str("PROLIFIC_WORKSPACE_ID", "")
#: Where participants go after submitting; the study's completion code is appended.
PROLIFIC_COMPLETION_URL = env_str("PROLIFIC_COMPLETION_URL", "https://app.prolific.com/submissions/complete?cc=")
#: Prolific's platform fee on rewards and bonuses (33.3% for academic accounts, 42.8% otherwise).
PROLIFIC_FEE_RATE = env_decimal("PROLIFIC_FEE_RATE", "0.333")

# --- Prolific arrivals: confirmed in the background, remembered, rate-limited (docs/prolific.md) --
#: All of the site's calls to Prolific's API (every process: arrivals, syncs, publishing) start at
#: most this many times a second, evenly spread (Prolific documents no fixed limit: see
#: platforms.prolific.provider.api_client); each call also honours its own 429's Retry-After.
PROLIFIC_API_CALLS_PER_SECOND = env_float("PROLIFIC_API_CALLS_PER_SECOND", 10.0, minimum=0.1)
#: A session's first arrival starts a check with Prolific on a background thread and waits for it
#: at most this long (seconds); then the participant gets the page that waits and takes them in by itself.
PROLIFIC_ARRIVAL_TIMEOUT_SECONDS = env_float("PROLIFIC_ARRIVAL_TIMEOUT_SECONDS", 2.0, minimum=0.1)
#: How long one check keeps asking Prolific (seconds), retrying throttled, failed or lost calls.
PROLIFIC_ARRIVAL_DEADLINE_SECONDS = env_float("PROLIFIC_ARRIVAL_DEADLINE_SECONDS", 15.0, minimum=0.5)
#: The waiting page asks again by itself every this many seconds (its refresh and Retry-After).
PROLIFIC_ARRIVAL_REFRESH_SECONDS = env_int("PROLIFIC_ARRIVAL_REFRESH_SECONDS", 2, minimum=1)
#: A link Prolific refused (unknown session, another study's or participant's, returned) is refused
#: from memory for this long (seconds), without asking again.
PROLIFIC_ARRIVAL_REFUSED_SECONDS = env_int("PROLIFIC_ARRIVAL_REFUSED_SECONDS", 300, minimum=0)
#: New sessions checked from one client address (core.web.client_ip) per minute; more get a page
#: that waits (429). The waiting page's own refreshes are not counted.
PROLIFIC_ARRIVALS_PER_CLIENT_PER_MINUTE = env_int("PROLIFIC_ARRIVALS_PER_CLIENT_PER_MINUTE", 30, minimum=1)
#: New sessions of one study checked with Prolific per minute; more get the waiting page (503).
PROLIFIC_ARRIVAL_CHECKS_PER_STUDY_PER_MINUTE = env_int("PROLIFIC_ARRIVAL_CHECKS_PER_STUDY_PER_MINUTE", 600, minimum=1)
#: These counters, the checks under way, their answers and the pace live in the ``shared`` cache
#: (see Caches above). With JOB_LOCAL_RUNNER = "inline" (the test suite) a check runs in the request.

# --- Prolific's signed study URLs (docs/prolific.md, "Signed study links") -------------------------
#: New Prolific batches ask for Prolific's signed study URL (``is_external_study_url_secure``): each
#: arrival carries a JWT checked here with Prolific's published keys, with no API call (the workspace
#: must have the feature). A batch's own ``signed_urls`` option wins.
PROLIFIC_SIGNED_URLS = env_bool("PROLIFIC_SIGNED_URLS", False)
#: The organisation the workspace is linked to, if any: a signed link must then name it too.
PROLIFIC_ORGANISATION_ID = env_str("PROLIFIC_ORGANISATION_ID", "")
#: Where Prolific publishes the study-signing keys (default: /.well-known/study/jwks.json at the API's origin).
PROLIFIC_JWKS_URL = env_str("PROLIFIC_JWKS_URL", "")
#: The keys are fetched again after this long (seconds; Prolific: "at least daily", so at most 86400)
#: and when a link names a key the set does not hold.
PROLIFIC_JWKS_REFRESH_SECONDS = env_int("PROLIFIC_JWKS_REFRESH_SECONDS", 6 * 3600, minimum=60)
#: One attempt to fetch the keys waits this long at most (seconds; two attempts).
PROLIFIC_JWKS_TIMEOUT_SECONDS = env_float("PROLIFIC_JWKS_TIMEOUT_SECONDS", 3.0, minimum=0.1)

# --- Prolific webhooks, and polling as their fallback (docs/prolific.md, "Webhooks") -----------
#: Publishing a Prolific batch subscribes the workspace to submission and study status changes, study
#: progress changes and high return rates, delivered to SITE_URL + /annotation/prolific/webhooks/events/
#: (an https address Prolific can reach).
PROLIFIC_WEBHOOKS = env_bool("PROLIFIC_WEBHOOKS", True)
#: A delivery signed longer ago than this (seconds), or this far ahead, is refused (replays).
PROLIFIC_WEBHOOK_MAX_AGE_SECONDS = env_int("PROLIFIC_WEBHOOK_MAX_AGE_SECONDS", 300, minimum=1)
#: ``manage.py poll_prolific`` (every minute from a timer) re-reads each published Prolific batch
#: not re-read for this long (seconds): without webhooks ...
PROLIFIC_POLL_SECONDS = env_int("PROLIFIC_POLL_SECONDS", 300, minimum=1)
#: ... and while webhooks are seen to work: every subscription confirmed by this site, a verified event
#: received within this long and no delivery refused since (no grace period after a confirmation).
#: Events that never arrive are caught; a broken delivery path (wrong SITE_URL, secret replaced) gives
#: the short interval at the next poll (platforms.prolific.webhooks.selectors).
PROLIFIC_POLL_WITH_WEBHOOKS_SECONDS = env_int("PROLIFIC_POLL_WITH_WEBHOOKS_SECONDS", 3600, minimum=1)
#: The earliest (seconds after its pay call) a person may confirm unpaid a bonus pay whose answer
#: was lost and which no submission shows (``prolific_bonus --confirm-unpaid``); past it such a
#: bulk is reported as needing a person, never paid again automatically: Prolific pays
#: asynchronously (platforms.prolific.bonuses.services).
PROLIFIC_BONUS_SETTLE_SECONDS = env_int("PROLIFIC_BONUS_SETTLE_SECONDS", 3600, minimum=60)
