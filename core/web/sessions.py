"""Django's database sessions, with each request's read of its session compiled once (issue 46).

Every page an annotator opens reads its session first: through the ORM, building and compiling
that one ``SELECT`` cost more CPU than running it. Here the statement is prepared once per
process (:mod:`core.db.prepared`), keyed by the session key alone, and a session past its expiry
is treated as not found here (Django's own read asks ``expire_date > now`` in SQL: the same
answer). Writing, expiry and ``clearsessions`` are Django's.
"""

from __future__ import annotations

import logging

from django.contrib.sessions.backends import db
from django.contrib.sessions.models import Session
from django.core.exceptions import SuspiciousOperation
from django.utils import timezone

from core.db.prepared import Prepared

_by_key = Prepared(lambda session_key: Session.objects.filter(session_key=session_key), scope=None)


class SessionStore(db.SessionStore):
    """``SESSION_ENGINE = "core.web.sessions"``: Django's ``db`` engine, its read prepared once."""

    def _get_session_from_db(self):
        try:
            key = self.session_key
            found = _by_key(session_key=key) if isinstance(key, str) else []
            if found and found[0].expire_date > timezone.now():
                return found[0]
            raise Session.DoesNotExist
        except (Session.DoesNotExist, SuspiciousOperation) as e:
            if isinstance(e, SuspiciousOperation):
                logger = logging.getLogger(f"django.security.{e.__class__.__name__}")
                logger.warning(str(e))
            self._session_key = None
