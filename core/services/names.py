"""Names of the study's objects: slugs (they appear in URLs and file names), checked here by every
service that creates a named object."""

from __future__ import annotations

from django.apps import apps
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug

from core.errors import ServiceError
from core.models import GroupOwned, scope_of


def _named_models() -> list:
    return [m for m in apps.get_models() if issubclass(m, GroupOwned) and any(f.name == "name" for f in m._meta.fields)]


def name_limit() -> int:
    """The longest name every named kind's column holds: one name may become several objects (a pool
    also makes a query set of its name), so the shortest column counts."""
    return min(m._meta.get_field("name").max_length for m in _named_models())


def validate_name(name: str, what: str) -> str:
    """Return ``name`` if it is a usable slug no longer than its column (checked here: SQLite stores
    any length), not another group's; otherwise a ServiceError naming ``what``."""
    limit = name_limit()
    if len(str(name)) > limit:
        raise ServiceError(f"{what} name: at most {limit} characters, not {len(str(name))}")
    try:
        validate_slug(name)
    except ValidationError:
        raise ServiceError(
            f"{what} name {name!r} is not usable: use letters, digits, hyphens and underscores (e.g. msmarco-dev)"
        ) from None
    _refuse_another_groups(name, what)
    return name


def _refuse_another_groups(name: str, what: str) -> None:
    """Names are unique on the site but another group's objects are not seen: a name one of them holds
    is refused here, not by the database's unique index (a 500)."""
    if scope_of() is None:
        return
    for model in _named_models():  # every kind: a pool also makes a query set of its name
        if model._base_manager.filter(name=name).exists() and not model._default_manager.filter(name=name).exists():
            raise ServiceError(f"{what} name {name!r} is taken by another research group; choose another")
