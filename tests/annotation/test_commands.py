"""The commands as a researcher types them, from a query set to an exported non-gendered set."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Batch, Export, Judgment
from pooling.models import QuerySet


def run(*args, **options) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO(), **options)
    return out.getvalue()


def test_end_to_end_from_a_query_set_to_an_exported_non_gendered_set(query_set, tmp_path):
    out = run(
        "create_batch", "--name", "e2e", "--queries", "gq", "--provider", "local",
        "--assignments", "3", "--queries-per-hit", "2", "--reward", "0.05",
    )  # fmt: skip
    assert "6 queries in 3 HITs" in out
    assert "9 assignments × ($0.05 reward + $0.00 fee) = $0.45" in out

    assert "Published 3 HIT(s)" in run("publish_batch", "e2e")
    out = run("simulate_annotations", "e2e", "--accuracy", "1", "--annotators", "3")
    assert "submitted 9 assignments (18 judgments); approved 9, rejected 0" in out
    assert Batch.objects.get(name="e2e").status == Batch.Status.COMPLETED

    report = json.loads(run("agreement", "e2e", "--json", "--bootstrap", "20"))
    assert report["krippendorff_alpha"] == 1.0
    assert (report["queries"], report["judgments"], report["workers"]) == (6, 18, 3)
    assert report["labels"] == {"n": 2, "f": 2, "m": 1, "o": 1}
    assert report["disputed"] == []
    assert report["gwet_ac1"] == 1.0 and report["per_category_ac1"]["o"] == 1.0
    # leave-one-out: each worker's 6 labels meet the other two workers' (unanimous) majority
    assert [(w["compared"], w["agreed"]) for w in report["per_worker"]] == [(6, 6)] * 3

    out = run("export_queries", "e2e", "--category", "non-gendered", "--out", str(tmp_path / "ng.tsv"), "--as", "ng")
    assert "Wrote 2 non-gendered queries" in out
    assert (tmp_path / "ng.tsv").read_text() == "101\twhat is a synapse\n105\thow to boil an egg\n"
    assert (tmp_path / "ng.tsv.md").exists()
    assert list(QuerySet.objects.get(name="ng").queries.values_list("qid", flat=True)) == ["101", "105"]

    run("export_queries", "e2e", "--category", "all", "--out", str(tmp_path / "all.csv"))
    assert Export.objects.get(path=str(tmp_path / "all.csv")).format == "csv"  # format from the suffix


def test_simulation_is_seeded(query_set):
    labels = []
    for name in ("s1", "s2"):
        run("create_batch", "--name", name, "--queries", "gq", "--assignments", "2", "--queries-per-hit", "3")
        run("publish_batch", name)
        run("simulate_annotations", name, "--accuracy", "0.5", "--seed", "7")
        labels.append(
            list(
                Judgment.objects.filter(batch_query__batch__name=name)
                .order_by("batch_query__qid", "assignment__worker__pseudonym")
                .values_list("label", flat=True)
            )
        )
    assert labels[0] == labels[1]


def test_create_batch_parses_mturk_options(query_set, tmp_path):
    gold = tmp_path / "gold.tsv"
    gold.write_text("g1\twhat is a mother\tf\n")
    run(
        "create_batch", "--name", "mt", "--queries", "gq", "--provider", "mturk", "--reward", "0.10",
        "--lifetime", "2d", "--assignment-duration", "20m", "--auto-approve", "36h",
        "--qualification", "locale=us,GB", "--qualification", "approval-rate=95",
        "--qualification", "approved-hits=1000", "--qualification", "masters",
        "--gold", str(gold), "--gold-per-hit", "1",
    )  # fmt: skip
    batch = Batch.objects.get(name="mt")
    assert batch.qualifications == {
        "locales": ["US", "GB"],
        "min_approval_rate": 95,
        "min_approved_hits": 1000,
        "masters": True,
    }
    assert batch.lifetime.total_seconds() == 2 * 86400
    assert batch.assignment_duration.total_seconds() == 1200
    assert batch.auto_approval_delay.total_seconds() == 36 * 3600
    assert batch.gold_per_hit == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--queries", "nope"], "no query set named 'nope'"),
        (["--pool", "nope"], "no pool named 'nope'"),
        (["--queries", "gq", "--reward", "0.001"], "whole cents"),
        (["--queries", "gq", "--lifetime", "soon"], "invalid duration value: 'soon'"),
        (["--queries", "gq", "--qualification", "karma=3"], "unknown --qualification"),
        (["--queries", "gq", "--gold-per-hit", "1"], "needs --gold"),
    ],
)
def test_create_batch_errors_are_clear(query_set, args, message):
    with pytest.raises(CommandError) as error:
        run("create_batch", "--name", "x", *args)
    assert message in str(error.value)
    assert not Batch.objects.exists()


def test_batch_names_must_be_usable_in_urls(query_set):
    with pytest.raises(CommandError, match="use letters, digits, hyphens and underscores"):
        run("create_batch", "--name", "Bad Name!", "--queries", "gq")
    assert not Batch.objects.exists()


def test_commands_name_unknown_batches(db):
    for command in ("publish_batch", "sync_batch", "cancel_batch", "agreement", "escalate_batch"):
        with pytest.raises(CommandError, match="no batch named 'nope'"):
            run(command, "nope")


def test_escalate_shows_the_cost_and_asks_first(query_set, monkeypatch):
    run("create_batch", "--name", "esc", "--queries", "gq", "--assignments", "2", "--queries-per-hit", "6")
    run("publish_batch", "esc")
    run("simulate_annotations", "esc", "--accuracy", "0", "--annotators", "2", "--seed", "3")
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    out = run("escalate_batch", "esc", "--max-assignments", "3")
    assert "Extra cost: 1 assignment(s) = $0.05 rewards + $0.00 fees = $0.05" in out  # in-house: no fee
    assert "Nothing done." in out
    assert Batch.objects.get(name="esc").hits.get().max_assignments == 2
    out = run("escalate_batch", "esc", "--max-assignments", "3", "--yes")
    assert "Added 1 assignment(s)." in out
    assert Batch.objects.get(name="esc").hits.get().max_assignments == 3
    assert "Nothing to escalate" in run("escalate_batch", "esc", "--max-assignments", "3", "--yes")


def test_create_annotator(db, django_user_model):
    out = run("create_annotator", "alice", "--password", "pw-secret-123")
    assert "alice" in out
    user = django_user_model.objects.get(username="alice")
    assert user.check_password("pw-secret-123") and user.groups.filter(name="annotators").exists()
    assert user.annotation_identity.worker.pseudonym.startswith("w-")


def test_create_annotator_refuses_bad_usernames_and_needs_a_terminal_for_the_prompt(db, monkeypatch):
    with pytest.raises(CommandError, match="username: 'bad name!' is not usable"):
        run("create_annotator", "bad name!", "--password", "pw-secret-123")

    def no_terminal(prompt=""):
        raise EOFError

    monkeypatch.setattr("getpass.getpass", no_terminal)
    with pytest.raises(CommandError, match="no terminal to ask for a password"):
        run("create_annotator", "alice")
    from django.contrib.auth import get_user_model

    assert not get_user_model().objects.filter(username__in=["alice", "bad name!"]).exists()


def test_create_annotator_never_takes_over_an_account(db, django_user_model):
    """An existing staff account is refused; an existing annotator needs --reset-password."""
    staff = django_user_model.objects.create_superuser("demo", "demo@example.org", "old-secret-pw-1")
    with pytest.raises(CommandError, match="'demo' is a staff account"):
        run("create_annotator", "demo", "--password", "new-secret-pw-1", "--reset-password")
    staff.refresh_from_db()
    assert staff.check_password("old-secret-pw-1") and not staff.groups.exists()

    run("create_annotator", "bob", "--password", "pw-secret-123")
    with pytest.raises(CommandError, match="'bob' already exists"):
        run("create_annotator", "bob", "--password", "other-secret-456")
    assert django_user_model.objects.get(username="bob").check_password("pw-secret-123")
    assert "new password" in run("create_annotator", "bob", "--password", "other-secret-456", "--reset-password")
    assert django_user_model.objects.get(username="bob").check_password("other-secret-456")


@pytest.mark.parametrize(
    ("password", "complaint"), [("x", "too short"), ("password123", "too common"), ("8437261950", "entirely numeric")]
)
def test_create_annotator_applies_the_password_validators(db, django_user_model, password, complaint):
    with pytest.raises(CommandError, match=complaint):
        run("create_annotator", "carol", "--password", password)
    assert not django_user_model.objects.filter(username="carol").exists()
