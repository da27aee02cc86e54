"""The Prolific connection's test (a ``core.test_connection`` job runs it: ``core.services.connections``)."""

from __future__ import annotations

import urllib.parse

from core.services.connections import ConnectionTestFailed, _call, _client
from platforms.prolific.connection.selectors import prolific_settings


def check_prolific() -> str:
    """Prolific: the token accepted (``users/me``), the project's studies and the workspace's groups readable."""
    conn = prolific_settings()
    if not conn.token:
        raise ConnectionTestFailed("no API token is set")
    client = _client(conn.api_url, {"Authorization": f"Token {conn.token}"})
    me = _call(client, "GET", "users/me/", label="API token", secret=conn.token)
    who = me.get("email") or me.get("name") or me.get("id") if isinstance(me, dict) else None
    parts = [f"token accepted{f' ({who})' if who else ''}"]
    if conn.project_id:
        _call(
            client,
            "GET",
            f"projects/{urllib.parse.quote(conn.project_id)}/studies/?limit=1",
            label="API token",
            secret=conn.token,
        )
        parts.append(f"project {conn.project_id} readable")
    else:
        parts.append("no project id set (publishing needs one)")
    if conn.workspace_id:
        query = urllib.parse.urlencode({"workspace_id": conn.workspace_id, "limit": 1})
        _call(client, "GET", f"participant-groups/?{query}", label="API token", secret=conn.token)
        parts.append(f"workspace {conn.workspace_id} readable")
    else:
        parts.append("no workspace id set (participant groups and webhooks need one)")
    return "Prolific: " + "; ".join(parts) + "."
