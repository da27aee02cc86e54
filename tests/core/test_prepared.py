"""A prepared query (``core.db.prepared``) answers what the ORM answers, within the current research-group scope."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from core.db.prepared import Prepared
from core.db.scope import acting_in
from core.models import ResearchGroup, scope_of
from pooling.models import QuerySet
from pooling.services import create_query_set


def _names_from(pk: int):
    return QuerySet.objects.filter(pk__gte=pk).order_by("pk").values_list("name", flat=True)


@pytest.fixture
def two_groups(db):
    groups = [ResearchGroup.objects.create(name=f"Group {c}", slug=f"group-{c}") for c in "ab"]
    for group, name in zip(groups, ("set-a", "set-b"), strict=True):
        with acting_in(group.pk):
            create_query_set(name, [("1", f"a query of {name}")], origin=QuerySet.Origin.IMPORTED)
    return groups


def test_rows_are_the_orms_with_new_values_each_time(two_groups):
    """The statement is compiled at the first call; later calls put their own values in it."""
    prepared = Prepared(lambda name: QuerySet.objects.filter(name=name).values_list("name", "origin"), scope=scope_of)
    for name in ("set-a", "set-b", "set-a", "no-such-set"):
        assert prepared(name=name) == list(QuerySet.objects.filter(name=name).values_list("name", "origin"))
    first = QuerySet.objects.order_by("pk").first()
    objects = Prepared(lambda pk: QuerySet.objects.filter(pk=pk), scope=scope_of)(pk=first.pk)
    assert [(o.pk, o.name, o.group_id) for o in objects] == [(first.pk, first.name, first.group_id)]


def test_each_scope_sees_its_own_groups_only(two_groups):
    """The scope is compiled into the statement, so each scope has its own: a group sees only its sets."""
    prepared = Prepared(_names_from, scope=scope_of)
    first = QuerySet.objects.order_by("pk").first().pk
    assert prepared(pk=first) == ["set-a", "set-b"]  # unscoped (a job, the shell)
    for group, name in zip(two_groups, ("set-a", "set-b"), strict=True):
        with acting_in(group.pk, only=True):
            assert prepared(pk=first) == [name]
            assert prepared(pk=first) == [name]  # its statement, stored, asked again
    assert prepared(pk=first) == ["set-a", "set-b"]


def test_a_query_that_cannot_be_prepared_is_refused(db):
    """A value the statement does not take as a parameter, or of a type it cannot stand for, is refused
    at the first call rather than stored as a wrong statement."""
    with pytest.raises(ImproperlyConfigured, match="name"):
        Prepared(lambda name: QuerySet.objects.all(), scope=scope_of)(name="unused")
    with pytest.raises(TypeError, match="float"):
        Prepared(lambda size: QuerySet.objects.filter(pk__gte=size), scope=scope_of)(size=1.5)
