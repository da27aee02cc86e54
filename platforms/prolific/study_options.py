"""A Prolific study's options (``Batch.provider_options``), declared once for the form, the API and the
command (:class:`annotation.crowd.providers.options.BatchOption`); :func:`platforms.prolific.provider.validate_options`
checks a whole set against the database. Pure: no Django.
"""

from __future__ import annotations

from functools import partial

from annotation.crowd.providers.options import MAX_REWARD, BatchOption, OptionError, options_by_name
from platforms.prolific.client import DEVICES

#: Every key a Prolific batch's options hold (``return_code``: Prolific asks a participant with no task to
#: return the study; ``paused_for_tasks``: the site paused the study for want of tasks).
OPTION_KEYS = {"estimated_minutes", "devices", "filters", "bonus", "exclude_batches", "completion_code"}
OPTION_KEYS |= {"allow_batches", "admit_gold_failures", "bonus_rule", "signed_urls", "rehearsal"}
OPTION_KEYS |= {"return_code", "paused_for_tasks"}


def read_filter(text: str) -> dict:
    """``FILTER_ID=v1,v2`` -> one of Prolific's eligibility filters (selected values)."""
    key, _, values = text.partition("=")
    chosen = [v.strip() for v in values.split(",") if v.strip()]
    if not key.strip() or not chosen:
        raise OptionError(
            "filter", f"not a filter: {text!r} (use FILTER_ID=value1,value2, e.g. current-country-of-residence=1,2)"
        )
    return {"filter_id": key.strip(), "selected_values": chosen}


def read_bonus_rule(text: str) -> dict:
    """``flat:0.50`` or ``per_gold:0.10`` as the stored rule (its kind and amount checked with the batch's settings)."""
    kind, _, amount = text.partition(":")
    return {"kind": kind.strip(), "amount": amount.strip()}


#: A Prolific study's options (``Batch.provider_options``), declared once for the form, the API and the command.
_option = partial(BatchOption, into="provider_options")
OPTIONS: tuple[BatchOption, ...] = (
    _option(
        "estimated_minutes",
        "whole",
        "minutes one HIT group takes, shown to participants; 10 when not given.",
        minimum=1,
        maximum=24 * 60,
    ),
    _option(
        "devices",
        "choices",
        "devices participants may use (none: any).",
        choices=tuple((d, d) for d in DEVICES),
        flag="--device",
    ),
    _option(
        "filters",
        "text",
        "eligibility filter, repeatable: FILTER_ID=value1,value2 (Prolific's filter ids and values)",
        flag="--filter",
        metavar="ID=VALUES",
        repeat=True,
        on_form=False,
        why="Prolific's filter ids and values are typed on the command line",
        read_flag=read_filter,
    ),
    _option(
        "bonus",
        "money",
        "USD to every approved participant, paid at every sync (a flat bonus rule).",
        maximum=MAX_REWARD,
    ),
    _option(
        "exclude_batches",
        "batches",
        "exclude everyone who took part in these batches.",
        flag="--exclude-batch",
        metavar="BATCH",
    ),
    _option(
        "allow_batches",
        "batches",
        "only those who took part in these batches may take this one.",
        flag="--allow-batch",
        metavar="BATCH",
    ),
    _option(
        "admit_gold_failures",
        "flag",
        "let in participants who failed another batch's gold threshold (kept out by default).",
    ),
    _option(
        "bonus_rule_kind",
        "choice",
        "a bonus previewed and paid from the batch page (not with the bonus above).",
        choices=(("flat", "flat, per approved participant"), ("per_gold", "per check question right")),
        label="Bonus rule",
        flag=None,
        key="bonus_rule.kind",
    ),
    _option(
        "bonus_rule_amount",
        "money",
        "USD.",
        minimum="0.01",
        maximum=MAX_REWARD,
        label="Bonus rule amount",
        flag=None,
        key="bonus_rule.amount",
    ),
    _option(
        "bonus_rule",
        "text",
        "a bonus rule paid with manage.py prolific_bonus: flat:0.50 (per approved participant) "
        "or per_gold:0.10 (per check question right in approved work)",
        metavar="KIND:USD",
        on_form=False,
        why="the form takes it as bonus_rule_kind and bonus_rule_amount",
        read_flag=read_bonus_rule,
    ),
    _option(
        "signed_urls",
        "flag",
        "participants arrive with Prolific's signed study URL, checked on this site with no API call per "
        "arrival (the workspace must have the feature; default PROLIFIC_SIGNED_URLS).",
    ),
)
BY_NAME = options_by_name(OPTIONS)
