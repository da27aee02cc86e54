"""MTurk's settings, read from the environment (docs/deployment.md lists them): installing the
platform (its line in ``INSTALLED_APPS``) puts them in Django's settings (``config/settings.py``)."""

from config.env import env_bool, env_float, env_int, env_str

# --- Mechanical Turk ------------------------------------------------------------------
#: Any MTurk-compatible server; empty means AWS's sandbox, or production with MTURK_LIVE=1.
MTURK_ENDPOINT_URL = env_str("MTURK_ENDPOINT_URL", "")
MTURK_LIVE = env_bool("MTURK_LIVE", False)
#: Where HIT forms post answers; empty means the worker site matching the endpoint.
MTURK_SUBMIT_URL = env_str("MTURK_SUBMIT_URL", "")
#: Client-side ceiling on MTurk calls per second (MTurk throttles bursts).
MTURK_MAX_CALLS_PER_SECOND = env_float("MTURK_MAX_CALLS_PER_SECOND", 5.0, minimum=0.01)
#: The longest time between two syncs of a published MTurk batch in this deployment
#: (``sync_batch``, the batch page or the API). MTurk approves and pays every assignment
#: still unreviewed after the HIT type's auto-approval delay, so a new MTurk batch's
#: delay must be longer than this (``BatchSettings.validate``; default delay 3 days).
MTURK_SYNC_INTERVAL_SECONDS = env_int("MTURK_SYNC_INTERVAL_SECONDS", 86400, minimum=1)
