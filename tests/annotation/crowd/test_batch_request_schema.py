"""The OpenAPI schema of batch creation is what the endpoint accepts, for every registered platform.

The schema of ``POST /api/annotation/batches/`` had drifted from the endpoint: it offered
``provider`` in ``["local", "mturk"]`` and 13 fields while the endpoint took ``prolific`` and about
30. Both now come from the providers' option declarations (``annotation.crowd.providers.options``);
these tests hold the documented request of each platform (fields, types, enums, ranges, defaults,
required-ness) to the serializer the endpoint reads it with and to the declaration, send a request
built from the schema alone, and send numbers out of range or not plain ASCII (a JSON 400 naming
the field, never a 500: a ``min_answers_judged`` of 10^20 used to overflow the database column).
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.core.management import load_command_class
from rest_framework import serializers

from annotation.crowd.forms import BatchForm
from annotation.crowd.providers.base import all_batch_options, batch_options, provider_class, provider_names
from annotation.crowd.serializers import batch_request_serializer
from annotation.models import Batch

SOURCE = {"name", "pool", "queries", "gold", "gold_set"}
#: The JSON type the schema gives each kind of option.
JSON_TYPES = {
    "whole": "integer",
    "share": "number",
    "money": "string",
    "choice": "string",
    "choices": "array",
    "flag": "boolean",
    "text": "string",
    "codes": "string",
    "batches": "array",
}


@pytest.fixture(scope="module")
def schema():
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def _resolve(schema: dict, node: dict) -> dict:
    """``node`` with its ``$ref``/``allOf``/``oneOf`` of enum components folded in (what a client reads)."""
    node = dict(node)
    if "$ref" in node:
        node = {**_resolve(schema, _component(schema, node.pop("$ref"))), **node}
    for key in ("allOf", "oneOf"):
        for part in node.pop(key, []):
            part = _resolve(schema, part)
            if part.get("enum") == [""] or part.get("enum") == [None]:  # BlankEnum / NullEnum
                node["blank"] = True
                continue
            node = {**part, **node}
    if node.get("type") == "array":
        node["items"] = _resolve(schema, node["items"])
    return node


def _component(schema: dict, ref: str) -> dict:
    return schema["components"]["schemas"][ref.rsplit("/", 1)[1]]


def _documented(schema: dict, path: str, provider: str) -> dict:
    """The request body a platform's client finds in the schema: the ``oneOf`` branch whose ``provider`` is it."""
    operation = schema["paths"][path]["post"]
    bodies = {
        media: _component(schema, body["schema"]["$ref"]) for media, body in operation["requestBody"]["content"].items()
    }
    assert len({str(body) for body in bodies.values()}) == 1, "JSON and forms take the same request"
    branches = [_component(schema, branch["$ref"]) for branch in next(iter(bodies.values()))["oneOf"]]
    mine = [b for b in branches if _resolve(schema, b["properties"]["provider"])["enum"] == [provider]]
    assert len(mine) == 1, (provider, [b["properties"]["provider"] for b in branches])
    return mine[0]


@pytest.mark.parametrize("estimate", [False, True], ids=["create", "estimate"])
@pytest.mark.parametrize("provider", provider_names())
def test_the_schema_documents_what_the_endpoint_reads_for_every_platform(schema, provider, estimate):
    path = "/api/annotation/batches/estimate/" if estimate else "/api/annotation/batches/"
    documented = _documented(schema, path, provider)
    used = batch_request_serializer(provider, estimate=estimate)()
    declared = {option.name: option for option in batch_options(provider) if option.on_form}

    # Fields: the serializer the endpoint reads the request with, and the declaration (plus the source).
    assert set(documented["properties"]) == set(used.fields)
    assert set(used.fields) == set(declared) | (SOURCE - ({"name", "gold", "gold_set"} if estimate else set()))
    # Every option the declaration gives the form is documented (nothing the endpoint takes is hidden).
    assert set(declared) <= set(BatchForm.base_fields)

    # Required-ness: the serializer's, which is the schema's.
    required = {name for name, field in used.fields.items() if field.required}
    assert set(documented.get("required", [])) == required
    assert required == ({"provider"} if provider != "local" else set()) | (set() if estimate else {"name"})

    for name, option in declared.items():
        prop = _resolve(schema, documented["properties"][name])
        field = used.fields[name]
        assert prop["type"] == JSON_TYPES[option.kind], name
        if name == "provider":
            assert prop["enum"] == [provider]
            assert prop.get("default") == ("local" if provider == "local" else None)
            continue
        if option.kind == "choice":
            assert prop["enum"] == option.values, name
        if option.kind == "choices":
            assert prop["items"]["enum"] == option.values, name
        if option.kind in ("whole", "share"):
            low = option.minimum if option.minimum is not None else 0
            high = option.maximum if option.maximum is not None else (1 if option.kind == "share" else None)
            assert prop.get("minimum") == low and prop.get("maximum") == high, name
        if option.kind == "money":
            assert prop["format"] == "decimal" and "[0-9]" in prop["pattern"], name
            assert str(option.maximum) in prop["description"], name
        if option.default is not None:
            assert prop["default"] == (str(option.default) if option.kind == "money" else option.default), name
            assert field.default == option.default, name
        else:
            assert "default" not in prop, name
        assert option.help in prop["description"], name
        assert isinstance(field, serializers.Field)


#: A property left out of a request built from the schema: free text the schema cannot fill in.
LEFT_OUT = object()


def _value_from_schema(schema: dict, prop: dict, *, bounds: bool):
    """A value for one property, read off its schema alone: its default, else its "off" value (null
    where nullable, blank where a blank choice is allowed), else the first of its enum, else its
    minimum (``bounds``: numbers without a default at their minimum rather than off), else a plain
    example of its type; ``LEFT_OUT``: free text."""
    prop = _resolve(schema, prop)
    if "default" in prop:
        return prop["default"]
    kind = prop["type"]
    if bounds and kind in ("integer", "number"):
        return prop["minimum"]
    if prop.get("nullable"):
        return None
    if prop.get("blank"):
        return ""
    if "enum" in prop:
        return prop["enum"][0]
    if kind in ("integer", "number"):
        return prop["minimum"]
    if kind == "boolean":
        return True
    if kind == "array":
        items = prop["items"]
        return [items["enum"][0]] if "enum" in items else []
    return LEFT_OUT


@pytest.mark.parametrize("bounds", [False, True], ids=["defaults", "minimums"])
@pytest.mark.parametrize("provider", provider_names())
def test_a_request_built_from_the_schema_is_accepted_for_every_platform(
    schema, provider, bounds, query_set, admin_client
):
    documented = _documented(schema, "/api/annotation/batches/", provider)
    body = {name: _value_from_schema(schema, prop, bounds=bounds) for name, prop in documented["properties"].items()}
    body = {name: value for name, value in body.items() if value is not LEFT_OUT}
    # The free-text fields: the batch's name, and the source (one of pool and queries, as their help says).
    body.update(name=f"from-schema-{provider}", queries="gq", provider=provider)
    assert set(documented.get("required", [])) <= set(body)
    assert len(body) >= len(documented["properties"]) - 3  # all but pool, gold and a free-text option

    estimate = admin_client.post(
        "/api/annotation/batches/estimate/",
        {k: v for k, v in body.items() if k != "name"},
        content_type="application/json",
    )
    assert estimate.status_code == 200, estimate.json()
    created = admin_client.post("/api/annotation/batches/", body, content_type="application/json")
    assert created.status_code == 201, created.json()
    batch = Batch.objects.get(name=body["name"])
    assert batch.provider == provider and created.json()["provider"] == provider
    assert batch.cost["total"] == estimate.json()["total"]


def _out_of_range(schema: dict, prop: dict):
    """A value just past a documented bound (or a money amount past its stated maximum)."""
    prop = _resolve(schema, prop)
    if prop["type"] == "integer" and "maximum" in prop:
        return prop["maximum"] + 1
    if prop["type"] == "number" and "maximum" in prop:
        return prop["maximum"] + 0.5
    if prop.get("format") == "decimal":
        return "1000000000"
    return None


@pytest.mark.parametrize("path", ["/api/annotation/batches/", "/api/annotation/batches/estimate/"])
@pytest.mark.parametrize("provider", provider_names())
def test_every_number_out_of_its_range_is_a_json_400_naming_the_field(schema, provider, path, query_set, admin_client):
    documented = _documented(schema, path, provider)
    base = {"name": "oor", "queries": "gq", "provider": provider}
    checked = 0
    for name, prop in documented["properties"].items():
        value = _out_of_range(schema, prop)
        if value is None:
            continue
        answer = admin_client.post(path, {**base, name: value}, content_type="application/json")
        assert answer.status_code == 400 and answer["Content-Type"].startswith("application/json"), (name, value)
        assert list(answer.json()) == [name], answer.json()
        (message,) = answer.json()[name]
        assert message.startswith(name.replace("_", " ") + ": must be"), message
        checked += 1
    assert checked >= 8
    assert not Batch.objects.exists()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("reward", "1000000"),  # 10^6: a 500 on creation once, while the estimate answered 200
        ("extra_budget", "1000000000"),  # 10^9
        ("min_answers_judged", 10**20),  # overflowed the database column: a 500
        ("min_answers_judged", "100000000000000000000"),
        ("assignments_per_query", "1_0"),  # int() reads it as 10
        ("queries_per_hit", "٣"),  # int() reads an Arabic-Indic 3
        ("gold_per_hit", "３"),  # a full-width 3
        ("warn_gold_accuracy", "٠.٥"),  # float() reads 0.5
        ("warn_agreement", "1e1"),  # a decimal with an exponent is read (issue 53): 10 is out of range
        ("block_agreement", "NaN"),
        ("assignments_per_query", True),
        ("queries_per_hit", 3.5),
    ],
)
@pytest.mark.parametrize("path", ["/api/annotation/batches/", "/api/annotation/batches/estimate/"])
def test_numbers_are_plain_ascii_within_their_range_on_create_and_estimate(query_set, admin_client, path, field, value):
    answer = admin_client.post(path, {"name": "n1", "queries": "gq", field: value}, content_type="application/json")
    assert answer.status_code == 400 and answer["Content-Type"].startswith("application/json")
    (message,) = answer.json()[field]
    assert message.startswith(field.replace("_", " ") + ": "), message
    assert not Batch.objects.exists()


@pytest.mark.parametrize("value", ["1_0", "٣", "abc", "NaN", "1e400", 1e300, 7])
@pytest.mark.parametrize("path", ["/api/annotation/batches/", "/api/annotation/batches/estimate/"])
def test_a_command_line_option_sent_to_the_api_is_read_by_the_number_reader_not_dropped(
    query_set, admin_client, path, value
):
    """``seed`` (command line only; the page and the API use 0) was dropped unseen: ``"1_0"``, ``"٣"``,
    ``"abc"``, ``1e400`` and ``"NaN"`` answered 201/200 (issue 68). Now it is read by the one number
    reader (a 400 naming it), and a seed other than the one the API uses is refused, not ignored."""
    body = (
        json.dumps({"name": "s1", "queries": "gq"})[:-1]
        + f', "seed": {json.dumps(value) if value != "1e400" else "1e400"}}}'
    )
    answer = admin_client.post(path, body, content_type="application/json")
    assert answer.status_code == 400 and answer["Content-Type"].startswith("application/json"), answer.content
    (message,) = answer.json()["seed"]
    assert message.startswith("seed: "), message
    assert not Batch.objects.exists()
    assert admin_client.post(
        path, {"name": "s0", "queries": "gq", "seed": 0}, content_type="application/json"
    ).status_code in (200, 201)


def test_the_page_and_the_command_refuse_the_same_numbers_by_the_same_rule(query_set, admin_client):
    from django.core.management import CommandError, call_command

    page = admin_client.post(
        "/annotation/batches/new/",
        {"name": "p1", "queries": "gq", "provider": "local", "min_answers_judged": "1_0"},
    )
    assert (
        page.status_code == 400 and "min answers judged: &#x27;1_0&#x27; is not a whole number" in page.content.decode()
    )
    with pytest.raises(CommandError, match=r"argument --min-answers: '1_0' is not a whole number"):
        call_command("create_batch", "--name", "c1", "--queries", "gq", "--min-answers", "1_0")
    with pytest.raises(CommandError, match=r"argument --assignments: must be at most 50 \(got 51\)"):
        call_command("create_batch", "--name", "c1", "--queries", "gq", "--assignments", "51")
    assert not Batch.objects.exists()


def test_a_value_for_another_platform_is_refused_by_name_not_dropped(query_set, admin_client):
    answer = admin_client.post(
        "/api/annotation/batches/",
        {"name": "x1", "queries": "gq", "provider": "local", "masters": True},
        content_type="application/json",
    )
    assert answer.status_code == 400 and "Amazon Mechanical Turk options only apply to the mturk provider" in str(
        answer.json()
    )
    answer = admin_client.post(
        "/api/annotation/batches/",
        {"name": "x1", "queries": "gq", "provider": "crowdflower"},
        content_type="application/json",
    )
    assert answer.status_code == 400 and list(answer.json()) == ["provider"]
    assert not Batch.objects.exists()


def test_the_command_offers_every_declared_option_with_its_help_and_default():
    parser = load_command_class("annotation", "create_batch").create_parser("manage.py", "create_batch")
    actions = {action.dest: action for action in parser._actions}
    for name, (option, owner) in all_batch_options().items():
        if option.cli is None:
            continue
        action = actions[name]
        assert option.cli in action.option_strings, name
        assert option.help.rstrip(".").replace("%", "%%")[:30] in action.help or name == "provider", name
        if option.default_text() and option.kind != "flag":
            assert f"default {option.default_text()}" in action.help, name
        group = next(g for g in parser._action_groups if action in g._group_actions)
        if owner:
            assert f"--provider {owner}" in group.title, name
    assert actions["provider"].choices == provider_names()
    assert actions["reward"].type("0.50") == Decimal("0.50")


def test_prices_are_the_providers_and_every_platform_has_them():
    from annotation.crowd.costs import bonus_cost, provider_cost

    for name in provider_names():
        platform = provider_class(name)
        cost = provider_cost(name, Decimal("0.10"), 3, 2)
        assert cost == platform.work_cost(Decimal("0.10"), 6, assignments_per_hit=3)
        assert bonus_cost([Decimal("0.10")], name).fee_rate == platform.bonus_fees([Decimal("0.10")])[0]
    with pytest.raises(ValueError, match="no prices known for provider 'crowdflower'"):
        provider_cost("crowdflower", Decimal("0.10"), 3, 2)
