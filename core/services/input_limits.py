"""The site's input limits (``SETTINGS``) handed to the pure readers (:mod:`genderbias.files.textfiles`),
which read no settings: when the apps load, and again whenever a test overrides one.
"""

from __future__ import annotations

from django.conf import settings

from genderbias.files.textfiles import configure_limits

#: The limits, each by the reader's name of it.
SETTINGS = {
    "decompressed": "IMPORT_MAX_DECOMPRESSED_BYTES",
    "held": "IMPORT_MAX_HELD_BYTES",
    "ratio": "IMPORT_MAX_EXPANSION_RATIO",
    "ratio_free": "IMPORT_EXPANSION_FREE_BYTES",
}


def apply_input_limits() -> None:
    configure_limits(**{name: getattr(settings, setting) for name, setting in SETTINGS.items()})


def input_limit_changed(*, setting: str, **kwargs) -> None:
    """``setting_changed`` receiver: re-apply the limits when one of them changes."""
    if setting in SETTINGS.values():
        apply_input_limits()
