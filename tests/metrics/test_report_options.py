"""Each report setting is declared once (core.options): its default, bounds and help.

The command, the form, the API's serializer and the model read the declaration, and a value is
checked by the declaration's one check. The scan below fails when a default or a bound of a report
setting is written again in the product (a literal ``5,10,20,30``, ``awrf_p=0.5``, a field of a
setting with its own ``default=``): the expected values come from the declarations themselves and
from the papers' cited settings (SIGIR 2020's cutoffs 5, 10, 20, 30; Sapiezynski et al.'s p in (0, 1)).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from core.options import (
    AWRF_P_OPTION,
    CUT_STEP_OPTION,
    CUTOFFS_OPTION,
    EXPOSURE_TARGET_OPTION,
    REPORT_OPTIONS,
    SENSITIVITY_CUTOFFS_OPTION,
)
from genderbias.ranking.defaults import OptionError

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("core", "pooling", "annotation", "metrics", "publishing", "config")
#: Where a setting's values may be written: its declaration, the defaults it reads, the papers' presets
#: (a paper's own settings, which may equal a default) and the migrations (history).
ALLOWED = {
    "core/options.py",
    "genderbias/ranking/defaults.py",
    "genderbias/presets.py",
    "genderbias/text/tokenize.py",
}
#: Settings whose names no other setting of the product shares (``threshold`` and ``seed`` are also
#: label sensitivity's confidence and other bootstraps'; ``tokenizer`` is pooling's too).
NAMES = {
    name
    for name in REPORT_OPTIONS
    if name not in ("threshold", "seed", "bootstrap", "tokenizer", "wordlist", "representative_wordlist", "preset")
}
FLAGS = {"--" + name.replace("_", "-") for name in NAMES}  # the commands' flags (core.management.cli.add_option)


def _product_files():
    for app in PRODUCT:
        for path in sorted((ROOT / app).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if "/migrations/" not in relative and relative not in ALLOWED:
                yield relative, ast.parse(path.read_text(encoding="utf-8"))


def _literal(node) -> bool:
    return isinstance(node, ast.Constant) or (
        isinstance(node, ast.Tuple) and all(isinstance(e, ast.Constant) for e in node.elts)
    )


def written_again(files) -> list[str]:
    """Every place in ``files`` ((path, tree) pairs) that writes a report setting's default or bound."""
    cutoff_texts = [
        re.compile(r"\b" + r"\s*,\s*".join(map(str, option.default)) + r"\b")
        for option in (CUTOFFS_OPTION, SENSITIVITY_CUTOFFS_OPTION)
    ]
    found = []
    for path, tree in files:
        docstrings = {
            id(node.value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        }
        for node in ast.walk(tree):
            if id(node) in docstrings:  # prose: an example in a docstring is no default
                continue
            where = f"{path}:{getattr(node, 'lineno', '?')}"
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if any(p.search(node.value) for p in cutoff_texts):
                    found.append(f"{where}: the default cutoffs {node.value!r}")
            elif isinstance(node, ast.Tuple) and _literal(node):
                if tuple(e.value for e in node.elts) in (CUTOFFS_OPTION.default, SENSITIVITY_CUTOFFS_OPTION.default):
                    found.append(f"{where}: the default cutoffs as a tuple")
            elif isinstance(node, ast.keyword) and node.arg in NAMES and _literal(node.value):
                found.append(f"{where}: {node.arg}= a literal")
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Call):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = {t.id for t in targets if isinstance(t, ast.Name)}
                if names & NAMES and any(
                    k.arg in ("default", "initial", "min_value", "max_value") and _literal(k.value)
                    for k in node.value.keywords
                ):
                    found.append(f"{where}: the field {sorted(names & NAMES)[0]} with its own default or bound")
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
                flags = {a.value for a in node.args if isinstance(a, ast.Constant)}
                if flags & FLAGS and any(k.arg == "default" and _literal(k.value) for k in node.keywords):
                    found.append(f"{where}: the option {sorted(flags & FLAGS)[0]} with its own default")
    return found


def test_no_report_setting_has_its_default_or_bounds_written_outside_its_declaration():
    assert written_again(_product_files()) == []


def test_the_scan_finds_each_way_of_writing_a_default_again():
    """The scan on a deliberately broken module: each way a default or bound was written before is found."""
    broken = """
from django import forms
cutoffs = forms.CharField(initial="5,10,20,30")
awrf_p = DecimalNumberField(default=0.5)
settings = ReportSettings(awrf_p=0.5, cut_step=10)
preset_cutoffs = (5, 10, 20, 30)
def add_arguments(parser):
    parser.add_argument("--exposure-target", default=0.5)
    parser.add_argument("--cutoffs", default="5,10,20")
"""
    found = written_again([("metrics/broken.py", ast.parse(broken))])
    assert sorted(line.split(":")[1] for line in found) == ["3", "3", "4", "5", "5", "6", "8", "9", "9"], found


def test_the_cutoffs_rule_is_one_check():
    """Sorted without repeats; at least one; each from 1 to the bound; at most the declared number of them."""
    assert CUTOFFS_OPTION.check([20, 5, 10, 5]) == (5, 10, 20)
    assert CUTOFFS_OPTION.parse("") == (5, 10, 20, 30)  # SIGIR 2020's tables' cutoffs
    assert CUTOFFS_OPTION.parse(" 30,5 ,10") == (5, 10, 30)
    for bad in ([], [5, 0], [CUTOFFS_OPTION.maximum + 1], [2.5], [True]):
        with pytest.raises(OptionError) as refused:
            CUTOFFS_OPTION.check(bad)
        assert refused.value.field == "cutoffs"
    with pytest.raises(OptionError, match="at most"):
        CUTOFFS_OPTION.check(range(1, CUTOFFS_OPTION.most + 2))
    with pytest.raises(OptionError, match="whole number"):
        CUTOFFS_OPTION.parse("5,ten")


@pytest.mark.parametrize("option", [AWRF_P_OPTION, EXPOSURE_TARGET_OPTION])
def test_a_share_lies_strictly_between_0_and_1(option):
    for good in (0.001, 0.5, 0.999):
        assert option.check(good) == good
    for bad in (0, 1, -0.1, 1.5, float("nan")):
        with pytest.raises(OptionError) as refused:
            option.check(bad)
        assert refused.value.field == option.name


def test_the_cut_step_is_a_whole_number_within_its_bounds():
    assert CUT_STEP_OPTION.check(10) == 10
    for bad in (0, 2.5, CUT_STEP_OPTION.maximum + 1):
        with pytest.raises(OptionError):
            CUT_STEP_OPTION.check(bad)


@pytest.mark.django_db
def test_the_command_the_form_and_the_api_refuse_the_same_value_with_the_same_words(client, django_user_model):
    """One check: ``--awrf-p 1`` on the command line, ``awrf_p=1`` on the form and in the API say the same."""
    from metrics.forms import ReportForm

    problem = None
    try:
        AWRF_P_OPTION.check(1.0)
    except OptionError as exc:
        problem = exc.problem
    with pytest.raises(CommandError, match=re.escape(problem)):
        call_command("bias_report", "--queries", "q", "--runs", "a", "--awrf-p", "1")
    form = ReportForm({"name": "r", "awrf_p": "1"})
    assert not form.is_valid() and form.errors["awrf_p"] == [problem]
    client.force_login(django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True))
    answer = client.post(
        "/api/metrics/reports/", {"name": "r", "runs": ["a"], "awrf_p": 1}, content_type="application/json"
    )
    assert answer.status_code == 400 and answer.json()["awrf_p"] == [problem]


def test_every_shell_states_the_declared_default():
    """The command's help, the form's initial value and the API's default are the declaration's."""
    from metrics.api import ReportRequestSerializer
    from metrics.forms import ReportForm
    from metrics.models import Report

    form = ReportForm()
    serializer = ReportRequestSerializer()
    for name in ReportForm.OPTIONS:
        option = REPORT_OPTIONS[name]
        expected = option.default_text if option.kind == "cutoffs" else option.default
        assert form.fields[name].initial == expected, name
        if option.default != "":
            assert serializer.fields[name].default == expected, name
    for name in ("awrf_p", "exposure_target", "cut_step", "awrf_weights", "exposure_form", "ties"):
        assert Report._meta.get_field(name).default == REPORT_OPTIONS[name].default, name
