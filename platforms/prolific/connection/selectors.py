"""The Prolific connection in force (``core.selectors.connection_state``): every client of Prolific reads it
here, at use time."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from core.selectors import connection_state
from platforms.prolific.connection.kind import PROLIFIC


@dataclass(frozen=True)
class ProlificSettings:
    """Prolific's API address, project and workspace; ``token`` is opened when read."""

    api_url: str
    project_id: str
    workspace_id: str
    _token: Callable[[], str] = field(repr=False)

    @property
    def token(self) -> str:
        return self._token()


def prolific_settings() -> ProlificSettings:
    """The Prolific connection in force: every client of Prolific reads it here, at use time."""
    state = connection_state(PROLIFIC.kind)
    return ProlificSettings(
        state.value("api_url"), state.value("project_id"), state.value("workspace_id"), state.secret("token")
    )
