"""Logging filters of the site (``LOGGING`` in config/settings.py). A refusal is an expected answer,
not a fault, yet Django logs every 403 with a traceback: :class:`OneLineForbidden` keeps the line.
"""

from __future__ import annotations

import logging


class OneLineForbidden(logging.Filter):
    """On ``django.request``: a 403's record without its exception (one line); others unchanged."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) == 403:
            record.exc_info = None
            record.exc_text = None
        return True
