"""Django's database sessions, each request's read of its session compiled once (:mod:`core.db.prepared`),
and read in the same statement as the session's user once this process has seen the session.

Django reads the session, decodes it, then reads its user: two statements. The user's id is inside
the signed data, out of SQL's reach, so this process remembers whose each session was
(:data:`_user_of_session`, bounded), and on its next request one statement reads both rows (a
subclass supplies it: ``annotation.accounts.SessionStore``). The remembered id is only a guess: the
user read with the session is used only when the decoded session names that same user
(:func:`user_read_with_session`); expiry and the session hash are checked exactly as Django does.
Writing, expiry and ``clearsessions`` are Django's.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from django.contrib.auth import SESSION_KEY
from django.contrib.sessions.backends import db
from django.contrib.sessions.models import Session
from django.core.exceptions import SuspiciousOperation
from django.utils import timezone

from core.db.prepared import Prepared

_by_key = Prepared(lambda session_key: Session.objects.filter(session_key=session_key), scope=None)

#: Session key -> the id of the user it was last loaded for, in this process (a guess, see above).
_user_of_session: dict[str, int] = {}
#: Sessions remembered at most; past it the memory starts again (a bound, not a working size).
_MAX_REMEMBERED = 20_000
_remember_lock = threading.Lock()
#: The session store whose user the authentication middleware is reading just now.
_reading_user_of: ContextVar[Any] = ContextVar("reading_user_of", default=None)


class SessionStore(db.SessionStore):
    """Django's ``db`` engine, its read prepared once; a subclass reads the session's user with it
    by overriding :meth:`_read_with_user`."""

    _user_row: Any = None

    def _read_with_user(self, session_key: str, user_id: int) -> tuple[str, Any, Any] | None:
        """``(session data, expiry, user)`` of the session and user ``user_id`` in one statement;
        ``None`` when not found together (no such session or user). None here: no user is read."""
        return None

    def _get_session_from_db(self):
        self._user_row = None
        try:
            key = self.session_key
            if not isinstance(key, str):
                raise Session.DoesNotExist
            guess = _user_of_session.get(key)
            together = self._read_with_user(key, guess) if guess is not None else None
            if together is not None:
                data, expire_date, self._user_row = together
                found = [Session(session_key=key, session_data=data, expire_date=expire_date)]
            else:
                found = _by_key(session_key=key)
            if found and found[0].expire_date > timezone.now():
                return found[0]
            raise Session.DoesNotExist
        except (Session.DoesNotExist, SuspiciousOperation) as e:
            if isinstance(e, SuspiciousOperation):
                logger = logging.getLogger(f"django.security.{e.__class__.__name__}")
                logger.warning(str(e))
            self._user_row = None
            self._session_key = None

    def load(self) -> dict:
        data = super().load()
        user_id = data.get(SESSION_KEY)
        if self.session_key and isinstance(user_id, str) and user_id.isdigit():
            with _remember_lock:
                if len(_user_of_session) >= _MAX_REMEMBERED:
                    _user_of_session.clear()
                _user_of_session[self.session_key] = int(user_id)
        return data


@contextmanager
def reading_user_of(session: Any) -> Iterator[None]:
    """While the request's user is read (the authentication middleware), ``session`` is the one
    whose user :func:`user_read_with_session` offers."""
    token = _reading_user_of.set(session)
    try:
        yield
    finally:
        _reading_user_of.reset(token)


def user_read_with_session(user_id: Any) -> Any | None:
    """The user ``user_id`` as the statement that read this request's session read it, if it did
    and the session (now decoded) names that same user; ``None``: read the user as usual."""
    session = _reading_user_of.get()
    row = getattr(session, "_user_row", None) if session is not None else None
    if row is None or str(row.pk) != str(user_id):
        return None
    return row
