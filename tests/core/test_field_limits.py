"""Every name and id a user gives has the length its column allows, checked where it is read, with the
same answer on SQLite (which stores any length) and PostgreSQL (which refuses past varchar(n)): each
field is sent its limit + 1, the limit read from the models' ``max_length`` (issue 68). Run on
PostgreSQL with DATABASE_URL pointing at one (bin/test's PostgreSQL stage)."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model

from annotation.models import Export
from core.errors import ServiceError
from core.models import GroupOwned, ResearchGroup
from core.services.groups import create_group
from core.services.names import validate_name
from core.services.usernames import new_username
from genderbias.errors import InputError
from pooling.models import Query, QuerySet
from pooling.services import import_queries
from tests.annotation.conftest import *  # noqa: F403 (its fixtures: its __all__)
from tests.annotation.test_api import answered  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db


def _limit(model, field: str) -> int:
    return model._meta.get_field(field).max_length


def _named_models() -> list:
    return [m for m in apps.get_models() if issubclass(m, GroupOwned) and any(f.name == "name" for f in m._meta.fields)]


@pytest.mark.parametrize("model", _named_models(), ids=lambda m: m.__name__)
def test_a_name_one_past_its_column_is_refused_by_the_name_check(model):
    limit = _limit(model, "name")
    with pytest.raises(ServiceError, match=f"at most {limit} characters"):
        validate_name("n" * (limit + 1), model._meta.verbose_name)
    assert validate_name("n" * limit, model._meta.verbose_name) == "n" * limit


def test_a_query_set_name_and_a_qid_one_past_their_columns(tmp_path):
    name_limit, qid_limit = _limit(QuerySet, "name"), _limit(Query, "qid")
    path = tmp_path / "q.tsv"
    path.write_text("q1\tfirst\n")
    with pytest.raises(ServiceError, match=f"at most {name_limit} characters"):
        import_queries(path, "s" * (name_limit + 1))
    for length in (qid_limit + 1, 5000):
        path.write_text(f"q1\tfirst\n{'7' * length}\tsecond\n")
        with pytest.raises(InputError) as raised:
            import_queries(path, "long-qids")
        assert str(raised.value) == f"{path}:2: query id of {length} characters: at most {qid_limit}"
    assert not QuerySet.objects.exists()
    path.write_text(f"{'7' * qid_limit}\tat the limit\n")
    import_queries(path, "at-limit")
    assert QuerySet.objects.get(name="at-limit").queries.get().qid == "7" * qid_limit


def test_the_export_apis_query_set_name_one_past_its_column_is_a_400(answered, researcher, client):  # noqa: F811
    limit = _limit(QuerySet, "name")  # the export registers its queries as a query set of this name
    client.force_login(researcher)
    answer = client.post(
        "/api/annotation/batches/b1/export/",
        {"category": "non-gendered", "format": "csv", "as_query_set": "x" * (limit + 1)},
        content_type="application/json",
    )
    assert answer.status_code == 400 and answer["Content-Type"].startswith("application/json"), answer.content
    assert f"at most {limit} characters" in str(answer.json())
    assert not Export.objects.exists() and not QuerySet.objects.filter(name__startswith="xxx").exists()


def test_a_group_name_and_a_username_one_past_their_columns():
    limit = _limit(ResearchGroup, "name")
    with pytest.raises(ServiceError, match=f"at most {limit} characters"):
        create_group("g" * (limit + 1))
    user_limit = _limit(get_user_model(), "username")
    with pytest.raises(ServiceError, match=f"at most {user_limit} characters"):
        new_username("u" * (user_limit + 1))
