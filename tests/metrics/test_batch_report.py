"""A report on a batch's labels: the same values as a report on the exported set, plus intervals
that carry the labels' uncertainty, stored, read back, and served."""

from __future__ import annotations

import pytest

from annotation.exports.services import export_queries
from annotation.models import Batch
from metrics import services
from metrics.models import Report, Result
from metrics.selectors import report_judged_values, report_labels, report_per_query, report_summary
from pooling.models import QuerySet, Run
from tests.support.kept_state import kept

SETTINGS = services.ReportSettings(cutoffs=(1, 2), bootstrap_samples=200, seed=3)


@pytest.fixture
def runs(world):
    return [Run.objects.get(name=n) for n in ("a", "b", "c")]


@pytest.mark.django_db
def test_values_equal_a_report_on_the_exported_set_and_p_follows_the_combined_test(batch, runs, tmp_path):
    export_queries(batch, "non-gendered", tmp_path / "ng.tsv", as_query_set="ng")
    plain = services.build_report("plain", QuerySet.objects.get(name="ng"), runs, SETTINGS, baseline=runs[0], bar=False)
    on_batch = services.build_batch_report("on-batch", batch, runs, SETTINGS, baseline=runs[0], bar=False)
    assert on_batch.on_batch and on_batch.label_batch == batch
    assert set(on_batch.query_set.queries.values_list("qid", flat=True)) == {"1", "2"}
    assert on_batch.query_set.name == "on-batch-non-gendered"
    before = {(r.run.name, r.metric, r.variant, r.cutoff): r for r in Result.objects.filter(report=plain)}
    after = {(r.run.name, r.metric, r.variant, r.cutoff): r for r in Result.objects.filter(report=on_batch)}
    assert before.keys() == after.keys()
    for key, row in after.items():
        assert (row.value, row.ci_low, row.ci_high, row.queries) == (
            before[key].value,
            before[key].ci_low,
            before[key].ci_high,
            before[key].queries,
        )
        assert row.query_p_value == before[key].p_value  # the t-test's, kept beside
        if key[0] != "a" and row.difference_combined_low is not None:
            excludes = row.difference_combined_low > 0 or row.difference_combined_high < 0
            assert row.p_value is None or (row.p_value < 0.05) <= excludes  # Holm only raises p
    # Three queries: the crowd model refitted on each bootstrap draw of them is too unstable for
    # 90% of the draws to be usable, so an interval may be undefined (shown as –), never wrong.
    for row in after.values():
        assert row.combined_low is None or row.combined_low <= row.combined_high
    # The per-query values the pages read are the set's; every judged query's are kept for the intervals.
    assert set(report_per_query(on_batch)["qid"]) == {"1", "2"}
    assert set(report_judged_values(on_batch)["qid"]) == {"1", "2", "3"}
    labels = report_labels(on_batch).set_index("qid")
    assert labels.loc["3", "in_set"] == False  # noqa: E712 (numpy bool)
    assert labels.loc["3", ["n", "f", "m", "o"]].sum() == pytest.approx(1.0)
    assert 0 < labels.loc["1", "n"] < 1  # two votes of three: not certain
    summary = report_summary(on_batch)
    assert {"combined_low", "label_share", "query_p_value"} <= set(summary.columns)


@pytest.mark.django_db
def test_a_ruling_makes_its_query_certain(batch, runs, django_user_model):
    from annotation.quality.services.adjudication import adjudicate

    researcher = django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True)
    adjudicate(batch, "3", "n", "asks about no one in particular", researcher)
    report = services.build_batch_report("ruled", batch, runs, SETTINGS, bar=False)
    labels = report_labels(report).set_index("qid")
    assert labels.loc["3", "n"] == 1.0 and labels.loc["3", "source"] == "adjudicated"
    assert set(report_per_query(report)["qid"]) == {"1", "2", "3"}


@pytest.mark.django_db
def test_nothing_is_left_behind_when_the_name_is_taken_or_nothing_is_non_gendered(batch, runs):
    services.build_batch_report("taken", batch, runs, SETTINGS, bar=False)
    with pytest.raises(services.ServiceError, match="already exists"):
        services.build_batch_report("taken", batch, runs, SETTINGS, bar=False)
    QuerySet.objects.create(name="clash-non-gendered", origin=QuerySet.Origin.IMPORTED)
    with pytest.raises(services.ServiceError, match="clash-non-gendered"):
        services.build_batch_report("clash", batch, runs, SETTINGS, bar=False)
    assert not Report.objects.filter(name="clash").exists()


def _built(folder):
    runs = [Run.objects.get(name=n) for n in ("a", "b", "c")]
    batch = Batch.objects.get(name="sens")
    return services.build_batch_report("shown", batch, runs, SETTINGS, baseline=runs[0], bar=False)


#: Built once for the module, each test in a savepoint of it (tests/support/kept_state.py).
_kept_built, built = kept("built", _built, after=("batch",))


@pytest.mark.django_db
def test_page_shows_both_intervals_the_plot_and_the_contributions(built, client, django_user_model):
    researcher = django_user_model.objects.create_user("res2", password="pw-secret-123", is_staff=True)
    client.force_login(researcher)
    page = client.get(f"/metrics/{built.name}/?lcutoff=2").content.decode()
    assert 'id="labels-table"' in page and "what moves it" in page
    assert "labels-stale" not in page
    row = Result.objects.get(report=built, run__name="b", metric="ARaB", variant="tf", cutoff=2)
    # Three queries: the interval may be undefined (the crowd model refitted per draw), the value never.
    assert f"{row.corrected:.4f}" in page
    assert row.combined_low is None or f"{row.combined_low:.4f}" in page
    svg = client.get(f"/metrics/{built.name}/labels.svg?metric=ARaB&variant=tf&cutoff=2")
    assert svg.status_code == 200 and svg["Content-Type"] == "image/svg+xml"
    assert client.get(f"/metrics/{built.name}/labels.svg?metric=ARaB&variant=tf&cutoff=7").status_code == 404
    why = client.get(f"/metrics/{built.name}/contributions/?run=b&metric=ARaB&variant=tf&cutoff=2")
    assert why.status_code == 200
    assert f"/annotation/batches/{built.label_batch.name}/review/?qid=" in why.content.decode()
    assert client.get(f"/metrics/{built.name}/contributions/?run=a&metric=ARaB&variant=tf&cutoff=2").status_code == 404


@pytest.mark.django_db
def test_page_says_when_the_answers_moved_since(built, client, django_user_model):
    from annotation.quality.services.adjudication import adjudicate

    researcher = django_user_model.objects.create_user("res3", password="pw-secret-123", is_staff=True)
    adjudicate(built.label_batch, "3", "n", "a later ruling", researcher)
    client.force_login(researcher)
    assert "labels-stale" in client.get(f"/metrics/{built.name}/").content.decode()


@pytest.mark.django_db
def test_api_serves_the_fields_and_the_contributions_with_json_errors(built, client, django_user_model):
    researcher = django_user_model.objects.create_user("res4", password="pw-secret-123", is_staff=True)
    client.force_login(researcher)
    body = client.get(f"/api/metrics/reports/{built.name}/").json()
    assert body["label_batch"] == built.label_batch.name
    assert body["significance"]["test"].startswith("bootstrap of the label-corrected")
    assert any(r["corrected"] is not None for r in body["results"])
    ok = client.get(f"/api/metrics/reports/{built.name}/contributions/?run=b&metric=ARaB&variant=tf&cutoff=2")
    assert ok.status_code == 200 and ok.json()["baseline"] == "a" and ok.json()["rows"]
    for bad in ("run=a&metric=ARaB&variant=tf&cutoff=2", "run=b&metric=Nope&variant=tf&cutoff=2", "run=b&cutoff=x"):
        answer = client.get(f"/api/metrics/reports/{built.name}/contributions/?{bad}")
        assert answer.status_code == 400 and "detail" in answer.json()


@pytest.mark.django_db
def test_command_from_batch_prints_both_intervals_and_writes_the_csv(batch, runs, tmp_path):
    import csv
    import io

    from django.core.management import call_command
    from django.core.management.base import CommandError

    out = io.StringIO()
    call_command(
        "bias_report", "--from-batch", batch.name, "--runs", "a,b", "--baseline", "a", "--cutoffs", "1,2",
        "--bootstrap", "100", "--name", "cli", "--out", str(tmp_path / "r.csv"), stdout=out,
    )  # fmt: skip
    text = out.getvalue()
    assert "With the labels' uncertainty" in text and "with labels 95%" in text
    assert "bootstrap of the label-corrected paired difference" in text
    rows = list(csv.DictReader(io.StringIO((tmp_path / "r.csv").read_text())))
    assert {"combined_low", "label_share", "query_p_value"} <= set(rows[0])
    with pytest.raises(CommandError, match=r"not allowed with|one of the arguments"):
        call_command("bias_report", "--from-batch", batch.name, "--queries", "q", "--runs", "a")
    with pytest.raises(CommandError, match="no batch named"):
        call_command("bias_report", "--from-batch", "nope", "--runs", "a")


@pytest.mark.django_db
def test_form_takes_a_batch_or_a_query_set_not_both(batch, runs):
    from metrics.forms import ReportForm

    both = ReportForm({"name": "x", "queries": "q", "batch": batch.name, "runs": ["a"], "cutoffs": "10"})
    neither = ReportForm({"name": "x", "runs": ["a"], "cutoffs": "10"})
    assert not both.is_valid() and not neither.is_valid()
    assert ReportForm(
        {"name": "x", "batch": batch.name, "runs": ["a"], "cutoffs": "10", "tokenizer": "words"}
    ).is_valid()


@pytest.mark.django_db
def test_papers_tables_show_the_reports_p_values(built):
    """One p-value per comparison wherever it is shown: the papers' tables of a report on a batch's
    labels take the combined test's p (and say so), with the t-test's beside it."""
    from metrics.selectors import report_table

    table = report_table(built, "ecir2024", cutoff=2)
    assert table["significance"]["test"].startswith("bootstrap of the label-corrected")
    stored = {
        (r.run.name, r.metric, r.variant, r.cutoff): r.p_value
        for r in Result.objects.filter(report=built).select_related("run")
    }
    compared = 0
    for row in table["rows"]:
        for column, cell in zip(table["columns"], row["cells"], strict=True):
            key = (row["run"], column["metric"], column["variant"], column["cutoff"])
            if key in stored and row["run"] != "a":
                assert cell["p_value"] == stored[key]
                compared += 1
    assert compared
    other = report_table(built, "ecir2024", cutoff=2, baseline="b")  # another baseline: the t-test, said so
    assert other["significance"]["test"].startswith("two-sided paired t-test")


@pytest.mark.django_db
def test_contributions_of_certain_queries_are_valid_json(batch, runs, client, django_user_model):
    """A ruled query is certain: it has no "if gendered" move (null in JSON, never NaN, never a 500)."""
    from annotation.quality.services.adjudication import adjudicate

    researcher = django_user_model.objects.create_user("res5", password="pw-secret-123", is_staff=True)
    adjudicate(batch, "1", "n", "a ruling", researcher)
    report = services.build_batch_report("ruled-json", batch, runs, SETTINGS, baseline=runs[0], bar=False)
    client.force_login(researcher)
    answer = client.get(f"/api/metrics/reports/{report.name}/contributions/?run=b&metric=ARaB&variant=tf&cutoff=2")
    assert answer.status_code == 200
    ruled = next(row for row in answer.json()["rows"] if row["qid"] == "1")
    assert ruled["if_gendered"] is None and ruled["expected_shift"] == 0.0


@pytest.mark.django_db
def test_the_command_lists_what_moves_a_difference(built):
    """``manage.py what_moves``: the same figures as the page and the API, in words or JSON."""
    import io
    import json

    from django.core.management import call_command
    from django.core.management.base import CommandError

    from metrics.selectors import report_contributions

    out = io.StringIO()
    call_command("what_moves", built.name, "--run", "b", "--metric", "ARaB", "--cutoff", "2", "--json", stdout=out)
    assert json.loads(out.getvalue()) == json.loads(json.dumps(report_contributions(built, "b", "ARaB", "tf", 2, 20)))
    words = io.StringIO()
    call_command("what_moves", built.name, "--run", "b", "--metric", "ARaB", "--cutoff", "2", stdout=words)
    assert "label-corrected difference" in words.getvalue() and "expected shift" in words.getvalue()
    with pytest.raises(CommandError, match="other than its baseline"):
        call_command("what_moves", built.name, "--run", "a", "--metric", "ARaB", "--cutoff", "2")
    with pytest.raises(CommandError, match="no report on a batch's labels named"):
        call_command("what_moves", "nope", "--run", "b")


@pytest.mark.django_db
def test_a_report_on_the_batchs_labels_is_a_use_its_answers_are_not_corrected_after(built):
    """Issue 53 (Medium): a correction was accepted after the report had read the labels, and the stored
    report was left unchanged with nothing stale. The report records its reading as a use, which refuses it."""
    from annotation.models import AnswerUse

    assert list(AnswerUse.objects.filter(batch=built.label_batch).values_list("action", flat=True)) == [
        "A report on its labels"
    ]


@pytest.mark.django_db
def test_the_report_job_says_each_step_with_its_counts(batch, runs, django_capture_on_commit_callbacks):
    """The page of a report on a batch's labels follows its Job: every step is said, the
    label-corrected fits counted one per run and per paired difference (issue 57)."""
    from django.db.models.signals import post_save

    from core.models import Job
    from genderbias.crowd.label_uncertainty import FITTING, REFITTING, RESAMPLING

    seen: list[tuple[str, int, int | None]] = []

    def record(sender, instance, **kwargs):
        if instance.kind == "report" and (instance.result or {}).get("step"):
            seen.append((instance.result["step"], instance.done, instance.total))

    post_save.connect(record, sender=Job)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            job = services.start_report("stepped", None, runs, SETTINGS, baseline=runs[0], label_batch=batch)
    finally:
        post_save.disconnect(record, sender=Job)
    job.refresh_from_db()
    assert job.status == Job.Status.DONE, job.message
    steps = list(dict.fromkeys(step for step, _, _ in seen))
    label_step = next(s for s in steps if s.lower() in (REFITTING, RESAMPLING))
    fitting = FITTING[:1].upper() + FITTING[1:]
    assert steps[-3:] == ["Intervals and tests over the queries (bootstrap)", label_step, fitting]
    counts = [(done, total) for step, done, total in seen if step == fitting]
    fits = len(runs) + len(runs) - 1  # each run, then each run against the baseline
    assert counts[0] == (0, fits) and counts[-1] == (fits, fits)
    assert [done for done, _ in counts] == sorted(done for done, _ in counts)  # it only moves forward
    # The crowd model's refits are counted out of the report's 200 bootstrap draws (the job's row is written
    # at most twice a second: the counts between, tests/genderbias/crowd/test_label_probabilities.py).
    assert label_step.lower() == REFITTING
    refits = [(done, total) for step, done, total in seen if step == label_step]
    assert refits[0] == (0, 200) and refits[-1] == (200, 200), refits
    assert [done for done, _ in refits] == sorted(done for done, _ in refits)
    assert Report.objects.get(name="stepped").on_batch


@pytest.mark.django_db
def test_the_command_draws_each_step_on_a_terminal(batch, runs, monkeypatch, capsys):
    """``bias_report --from-batch`` on a terminal: a bar per step, the label-corrected ones included
    (their descriptions on standard error, where tqdm draws)."""
    from django.core.management import call_command

    from core import progress
    from genderbias.crowd.label_uncertainty import FITTING, REFITTING, RESAMPLING

    monkeypatch.setattr(progress, "_on_terminal", lambda: True)
    call_command(
        "bias_report", "--from-batch", batch.name, "--runs", "a,b", "--baseline", "a", "--cutoffs", "1,2",
        "--bootstrap", "100", "--name", "bars",
    )  # fmt: skip
    err = capsys.readouterr().err
    assert "Intervals and tests over the queries (bootstrap)" in err
    assert any(step[:1].upper() + step[1:] in err for step in (REFITTING, RESAMPLING))
    fitting = FITTING[:1].upper() + FITTING[1:]
    assert f"{fitting}:   0%|" in err and "| 0/3 [" in err, err  # two runs and one paired difference
