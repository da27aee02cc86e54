"""What a researcher has seen of CHANGELOG.md: acknowledging its entries, once per user."""

from __future__ import annotations

from core.models import ChangelogAcknowledgement
from core.selectors import changelog_entries


def acknowledge_changelog(user) -> None:
    """Record that ``user`` has seen every entry of CHANGELOG.md up to the newest: the home page no
    longer lists them (a later entry is listed again)."""
    entries = changelog_entries()
    if not entries:
        return
    ChangelogAcknowledgement.objects.update_or_create(user=user, defaults={"heading": entries[0].heading})
