"""crowd's hooks: the sub-domains above it plug in there, and every process has them once the app is ready."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from annotation.crowd.services import hooks
from annotation.crowd.services.hooks import Hooks, PlatformSyncs


def _names(functions) -> list[str]:
    return [f"{f.__module__}.{f.__qualname__}" for f in functions]


def test_the_app_registers_the_sub_domains_hooks_when_ready():
    """annotation.apps.PLUG_INS is imported by AnnotationConfig.ready(): no caller imports them first
    (Prolific's own: tests/platforms/prolific/test_prolific_in_the_kernel.py)."""
    assert _names(hooks.created.for_provider("local")) == ["annotation.quality.services.training.store_training"]
    assert _names(hooks.sync_steps.for_provider("mturk")) == [
        "annotation.machine.services.held_out.reoffer_held_out",  # before the loop: held-out places re-offered
        "annotation.quality.services.loop.close_the_loop",
        "annotation.machine.services.after_sync.report_after_sync",  # after the loop: it reads what the loop settled
    ]
    assert hooks.published.for_provider("mturk") == []
    assert hooks.platform_syncs.get("mturk") is None and hooks.platform_syncs.get("local") is None


def test_hooks_run_in_order_for_their_provider_and_a_reloaded_module_replaces_its_own():
    point, calls = Hooks("test"), []

    def first(batch, value):
        calls.append(("first", batch.provider, value))

    def only_prolific(batch, value):
        calls.append(("prolific", batch.provider, value))

    point.register(first)
    point.register(provider="prolific")(only_prolific)
    point.register(first)  # its module loaded again: still once, in its place
    point.run(SimpleNamespace(provider="mturk"), 1)
    point.run(SimpleNamespace(provider="prolific"), 2)
    assert calls == [("first", "mturk", 1), ("first", "prolific", 2), ("prolific", "prolific", 2)]


def test_a_platform_is_synced_by_one_function():
    syncs = PlatformSyncs()

    def one(batch, provider, **options):
        return "one"

    def other(batch, provider, **options):
        return "other"

    syncs.register("p")(one)
    syncs.register("p")(one)  # reloaded
    with pytest.raises(ValueError, match=r"'p' is synced by .*one already"):
        syncs.register("p")(other)
    assert syncs.get("p") is one
