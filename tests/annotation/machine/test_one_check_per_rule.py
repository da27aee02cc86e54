"""One check per rule (issue 42.4): a routing request's rules live in the service
(``annotation.machine.services.routing.check_routing``); the page, the API and ``manage.py route``
only read the values and translate the service's refusal into their own words. So each shell
refuses the same bad input with the same message, under the same field, and nothing is created.

The expected refusal is not written here: it is what the service itself says when called
directly, and every shell must say exactly that (under the field on the page, as
``{field: [message]}`` in the API, after the option's name on the command line)."""

import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.machine.services.routing import plan_routing, route_and_publish
from annotation.models import Batch, Routing
from core.errors import FieldError
from tests.annotation.conftest import make_batch

ROOT = Path(__file__).resolve().parents[3]

#: Bad routing requests as a person writes them: (fields, the field the refusal names).
BAD = {
    "target above 1": ({"target_accuracy": "1.5"}, "target_accuracy"),
    "target 0": ({"target_accuracy": "0"}, "target_accuracy"),
    "risk 0": ({"target_accuracy": "0.9", "risk": "0"}, "risk"),
    "risk 1.5, no guarantee": ({"target_accuracy": "0.9", "risk": "1.5", "no_guarantee": True}, "risk"),
    "cascade floor above 1": ({"target_accuracy": "0.9", "cascade": "rules:1.5,trained"}, "cascade"),
    "cascade twice": ({"target_accuracy": "0.9", "cascade": "rules,rules"}, "cascade"),
    "cascade, no guarantee": ({"target_accuracy": "0.9", "cascade": "rules", "no_guarantee": True}, "cascade"),
}


def _service_refusal(fields: dict) -> tuple[str, str]:
    """What the service says, called with the values as Python reads them."""
    kwargs = {
        "risk": float(fields.get("risk", "0.05")),
        "no_guarantee": fields.get("no_guarantee", False),
        "cascade": fields["cascade"].split(",") if "cascade" in fields else None,
    }
    with pytest.raises(FieldError) as refused:
        plan_routing(Batch(name="unsaved"), float(fields["target_accuracy"]), **kwargs)  # checked before any read
    return refused.value.field, refused.value.problem


def _page(client, method: str, fields: dict) -> tuple[str, str]:
    data = {key: ("on" if value is True else value) for key, value in fields.items()}
    response = getattr(client, method)(reverse("annotation:batch-routing", args=["mb"]), data)
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert len(errors) == 1, errors
    ((field, messages),) = errors.items()
    assert len(messages) == 1
    return field, messages[0]


def _api(client, method: str, fields: dict) -> tuple[str, str]:
    url = "/api/annotation/batches/mb/routing/"
    body = {key: (value.split(",") if key == "cascade" else value) for key, value in fields.items()}
    if method == "get":  # a list as repeated parameters: ?cascade=rules&cascade=trained
        response = client.get(url, {key: ("true" if value is True else value) for key, value in body.items()})
    else:
        response = client.post(url, body, content_type="application/json")
    assert response.status_code == 400, response.content
    ((field, messages),) = response.json().items()
    assert len(messages) == 1
    return field, messages[0]


def _command(fields: dict) -> tuple[str, str]:
    args = []
    for key, value in fields.items():
        flag = "--" + key.replace("_", "-")
        args += [flag] if value is True else [flag, value]
    with pytest.raises(CommandError) as refused:
        call_command("route", "mb", *args, "--yes", stdout=StringIO())
    match = re.fullmatch(r"--([a-z-]+): (.*)", str(refused.value), re.DOTALL)
    assert match, str(refused.value)
    return match[1].replace("-", "_"), match[2]


SHELLS = ["page preview", "page route", "api preview", "api route", "command"]


@pytest.mark.parametrize("case", list(BAD))
@pytest.mark.parametrize("shell", SHELLS)
def test_every_shell_refuses_bad_input_with_the_services_words(query_set, researcher, client, shell, case):
    make_batch(query_set, name="mb")  # a draft: the request is refused before the batch's state matters
    client.force_login(researcher)
    fields, field = BAD[case]
    expected = _service_refusal(fields)
    assert expected[0] == field
    if shell == "command":
        said = _command(fields)
    else:
        where, how = shell.split()
        method = "get" if how == "preview" else "post"
        said = _page(client, method, fields) if where == "page" else _api(client, method, fields)
    assert said == expected
    assert not Routing.objects.exists() and not Batch.objects.filter(purpose=Batch.Purpose.ROUTED).exists()


def test_route_and_publish_checks_the_request_before_the_batchs_state(query_set):
    """A bad request to a batch that cannot be routed (published) is refused as bad input (400, not 409)."""
    from annotation import services

    batch = make_batch(query_set, name="mb")
    services.publish_batch(batch)
    with pytest.raises(FieldError, match="target accuracy"):
        route_and_publish(batch, 2.0)


#: Each rule's words, and the one product module allowed to hold them.
RULES = {
    "the target accuracy must be": "annotation/machine/services/routing/plan.py",
    "the risk must be between 0 and 1": "annotation/machine/services/routing/plan.py",
    "a cascade needs the guarantee": "annotation/machine/services/routing/plan.py",
    "names no labeller": "annotation/machine/services/routing/plan.py",
}
#: The "no guarantee" mapping (the flag to ``risk=None``), written once.
NO_GUARANTEE = re.compile(r"None if [\w.\[\]\"'()]*no_guarantee")


def _product_sources():
    for app in ("core", "pooling", "annotation", "metrics", "config"):
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8")


def test_each_rule_is_written_in_one_module():
    """A copy of a rule in a shell (a form's ``clean_``, a serializer's ``validate_``, a command's
    own check) would hold its words: they are in the service's module only."""
    sources = dict(_product_sources())
    for words, home in RULES.items():
        holders = [path for path, text in sources.items() if words in text]
        assert holders == [home], (words, holders)
    mappings = [path for path, text in sources.items() if NO_GUARANTEE.search(text)]
    assert mappings == ["annotation/machine/services/routing/plan.py"], mappings
