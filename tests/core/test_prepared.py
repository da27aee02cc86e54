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


def _named(name: str, source: str):
    return QuerySet.objects.filter(name=name, source=source)


def test_a_prepared_update_writes_what_the_orms_update_writes(two_groups):
    """The columns' values (a text, a time) go in at each run; the rows are the filter's, within the scope."""
    import datetime as dt

    from core.db.prepared import PreparedUpdate

    write = PreparedUpdate(_named, scope=scope_of)
    when = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    assert write({"description": "first", "created": when}, name="set-a", source="") == 1
    assert write({"description": "again"}, name="set-a", source="elsewhere") == 0  # the filter's other value
    assert write({"description": "second", "created": when}, name="set-b", source="") == 1
    rows = dict(QuerySet.objects.values_list("name", "description"))
    assert rows == {"set-a": "first", "set-b": "second"}
    assert set(QuerySet.objects.values_list("created", flat=True)) == {when}
    _, b = two_groups
    with acting_in(b.pk, only=True):  # group b's scope: group a's set is not found, so not written
        assert write({"description": "from b"}, name="set-a", source="") == 0
        assert write({"description": "from b"}, name="set-b", source="") == 1
    assert dict(QuerySet.objects.values_list("name", "description")) == {"set-a": "first", "set-b": "from b"}


def test_an_update_that_cannot_be_prepared_is_refused(db):
    """A value the rows' filter does not take as a parameter is refused at the first call."""
    from core.db.prepared import PreparedUpdate

    with pytest.raises(ImproperlyConfigured, match="name"):
        PreparedUpdate(lambda name: QuerySet.objects.all(), scope=scope_of)({"description": "x"}, name="unused")
