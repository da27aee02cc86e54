"""Rows kept for a module: each test that uses them sees exactly what the build made, whatever ran before.

The tests below run in the file's order (pytest-django moves the transactional one to the end): one
changes the kept rows and the next still sees them as built; one that does not ask for them sees none;
one that asks for the child sees the parent's rows too, one that asks for the parent only does not see
the child's; two states apart from each other are kept together and apart; the transactional one gets them built afresh in its own database. Each asserts what holds
in any order, so the order only chooses which paths run.
"""

import pytest
from django.conf import settings

from pooling.models import QuerySet
from tests.support.kept_state import Keeper, kept


def _sets(folder):
    (folder / "built.txt").write_text("once")
    QuerySet.objects.create(name="kept-a", source=str(folder))
    QuerySet.objects.create(name="kept-b")
    (settings.CACHE_DIR / "cached.txt").write_text("kept")
    return {"path": folder, "set": QuerySet.objects.get(name="kept-a")}


def _child(folder):
    QuerySet.objects.create(name="kept-child", description=QuerySet.objects.get(name="kept-a").source)
    return "child"


_kept_sets, sets = kept("sets", _sets)
_kept_child, child = kept("child", _child, after=("sets",))
_kept_other, other = kept("other", lambda folder: QuerySet.objects.create(name="kept-other").name)
_kept_both, both = kept("both", lambda folder: QuerySet.objects.create(name="kept-both").name, after=("child", "other"))


def names():
    return sorted(QuerySet.objects.values_list("name", flat=True))


def test_a_test_changing_the_kept_rows_and_the_value_it_got(sets):
    assert names() == ["kept-a", "kept-b"]
    QuerySet.objects.filter(name="kept-b").delete()
    QuerySet.objects.create(name="kept-c")
    sets["set"].name = "renamed"
    sets["set"].save()
    assert names() == ["kept-c", "renamed"]


def test_the_next_test_sees_the_rows_and_value_as_built(sets):
    assert names() == ["kept-a", "kept-b"]
    assert sets["set"].name == "kept-a" and sets["set"].source == str(sets["path"])
    assert (sets["path"] / "built.txt").read_text() == "once"
    assert (settings.CACHE_DIR / "cached.txt").read_text() == "kept"


@pytest.mark.django_db
def test_a_test_not_asking_for_them_sees_none():
    assert names() == []


def test_the_child_is_built_on_the_parents_rows(child, sets):
    assert child == "child"
    assert names() == ["kept-a", "kept-b", "kept-child"]
    assert QuerySet.objects.get(name="kept-child").description == str(sets["path"])
    assert (settings.CACHE_DIR / "cached.txt").read_text() == "kept"


def test_the_parent_alone_is_without_the_childs_rows(sets):
    assert names() == ["kept-a", "kept-b"]


def test_the_child_again_after_a_test_without_it(child):
    assert names() == ["kept-a", "kept-b", "kept-child"]


def test_another_state_alone(other):
    assert other == "kept-other" and names() == ["kept-other"]


def test_two_states_opened_in_either_order(other, child):
    assert names() == ["kept-a", "kept-b", "kept-child", "kept-other"]


def test_a_state_on_two_others(both):
    assert names() == ["kept-a", "kept-b", "kept-both", "kept-child", "kept-other"]


def test_one_of_them_without_the_other(sets):
    assert names() == ["kept-a", "kept-b"]


@pytest.mark.django_db(transaction=True)
def test_a_transactional_test_gets_them_built_in_its_own_database(child, sets):
    assert names() == ["kept-a", "kept-b", "kept-child"]
    assert (sets["path"] / "built.txt").read_text() == "once"


def test_a_file_of_the_build_changed_or_removed_is_named_and_a_new_one_is_not(db, django_db_blocker, tmp_path):
    keeper = Keeper("unit", _sets, tmp_path / "unit", django_db_blocker)
    keeper.open()
    try:
        built = keeper.folder / "built.txt"
        (keeper.folder / "new.txt").write_text("a test's own file")
        assert keeper.changed_files() == []
        built.write_text("changed")
        assert keeper.changed_files() == [built]
        built.unlink()
        assert keeper.changed_files() == [built]
    finally:
        keeper.release()


def test_a_live_server_test_gets_them_built_in_its_own_database(live_server, sets):
    assert names() == ["kept-a", "kept-b"]
