"""The Prolific workspace as a connection of the site (``core.connection_kinds``). Pure."""

from __future__ import annotations

from core.connection_kinds import ConnectionField, ConnectionKind

PROLIFIC_API_URL_DEFAULT = "https://api.prolific.com/api/v1/"

PROLIFIC = ConnectionKind(
    "prolific",
    "Prolific workspace",
    (
        ConnectionField(
            "api_url", "API address", "PROLIFIC_API_URL", PROLIFIC_API_URL_DEFAULT, url=True, help="Prolific's API."
        ),
        ConnectionField(
            "token", "API token", "PROLIFIC_API_TOKEN", secret=True, help="Prolific: Settings, API tokens."
        ),
        ConnectionField("project_id", "Project id", "PROLIFIC_PROJECT_ID", help="The project that holds the studies."),
        ConnectionField(
            "workspace_id", "Workspace id", "PROLIFIC_WORKSPACE_ID", help="Participant groups and webhooks."
        ),
    ),
    about="Publishing, syncing and paying Prolific batches; participants' arrivals; webhooks.",
)
