"""The batch settings are declared once (annotation.crowd.services.batch_settings); the model, the form and the command follow it."""

from dataclasses import dataclass, fields

from django.core.management import load_command_class

from annotation.crowd.forms import BatchForm
from annotation.crowd.providers.base import all_batch_options
from annotation.crowd.services.batch_settings import NOT_STORED, OFFERED, BatchSettings
from annotation.models import Batch


@dataclass(frozen=True)
class Offered:
    """Where the shells take one setting: the batch form's field and the command's option; ``None``:
    not offered there (the default applies), for the reason ``why_not``."""

    form: str | None
    option: str | None
    why_not: str = ""


def _offered() -> dict[str, Offered]:
    """Where each shell offers each setting, read off the options' declarations (a dict's first option
    stands for it); ``gold_pass_fraction`` is set through the services only."""
    offered: dict[str, Offered] = {}
    for option, _owner in all_batch_options().values():
        into = option.store_key if option.into == "settings" else option.into
        if into not in offered:
            why = option.why if option.into == "settings" else f"form and command: one field per {into} option"
            offered[into] = Offered(option.name if option.on_form else None, option.cli, why)
    offered["gold_pass_fraction"] = Offered(
        None, None, "every gold question must be right (1.0) unless set through the services"
    )
    return offered


OFFERS = _offered()


def _command_options() -> set[str]:
    parser = load_command_class("annotation", "create_batch").create_parser("manage.py", "create_batch")
    return {option for action in parser._actions for option in action.option_strings}


def test_every_setting_is_declared_with_where_it_is_offered():
    assert set(OFFERS) == set(OFFERED) == {f.name for f in fields(BatchSettings)}


def test_every_stored_setting_is_a_batch_column_of_the_same_name():
    columns = {f.name for f in Batch._meta.get_fields()}
    assert {name for name in OFFERED if name not in NOT_STORED} <= columns
    assert not NOT_STORED & columns


def test_the_form_and_the_command_offer_what_the_declaration_says():
    options = _command_options()
    for name, offered in OFFERS.items():
        assert offered.form is None or offered.form in BatchForm.base_fields, name
        assert offered.option is None or offered.option in options, name
        assert (offered.form and offered.option) or offered.why_not, f"{name}: say why a shell leaves it out"


def test_defaults_agree_between_the_declaration_the_form_and_the_model():
    defaults = BatchSettings()
    for name in ("assignments_per_query", "queries_per_hit", "reward", "min_answers_judged"):
        assert BatchForm.base_fields[name].initial == getattr(defaults, name), name
    for name in ("assignments_per_query", "queries_per_hit", "gold_per_hit", "min_answers_judged"):
        assert Batch._meta.get_field(name).default == getattr(defaults, name), name
