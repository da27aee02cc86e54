"""The study plan's service, command, API and panel: where the pilot comes from, the pool's share and
the costs on small hand-computed cases, the command's JSON, the API's 4xx refusals, the batch page's
sentence."""

import io
import json
import math
from decimal import Decimal

import numpy as np
import polars as pl
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation import services as annotation_services
from annotation.models import Routing
from annotation.quality.services.adjudication import adjudicate
from core.errors import ServiceError
from genderbias.stats import plan_inputs, power
from genderbias.stats.intervals import wilson_interval
from metrics.models import Report, Result
from metrics.services import planning
from metrics.services.reports import default_representative_wordlist
from pooling.models import Pool, QuerySet, Run
from pooling.services import create_query_set, register_wordlist

QIDS = [f"p{i}" for i in range(40)]


def pilot_differences(seed=0):
    """A − B on 40 queries: a known, varying sample."""
    return np.random.default_rng(seed).normal(0.004, 0.02, size=len(QIDS))


def stored_report(tmp_path, name, runs=("a", "b"), cutoffs=(10,), seed=0, bool_shift=0.0):
    """A report row with a per-query file of our making: ARaB tf and bool at ``cutoffs``, B = 0.1,
    A = B + the pilot's differences (bool: shifted by ``bool_shift``)."""
    differences = pilot_differences(seed)
    rows = []
    for cutoff in cutoffs:
        for variant, shift in (("tf", 0.0), ("bool", bool_shift)):
            for qid, d in zip(QIDS, differences, strict=True):
                rows.append(("b", qid, "ARaB", variant, cutoff, 0.1))
                rows.append(("a", qid, "ARaB", variant, cutoff, 0.1 + d + shift))
    frame = pl.DataFrame(rows, schema=["run", "qid", "metric", "variant", "cutoff", "value"], orient="row")
    frame = frame.filter(pl.col("run").is_in(list(runs)))
    path = tmp_path / f"{name}.parquet"
    frame.write_parquet(path)
    report = Report.objects.create(
        name=name,
        query_set=QuerySet.objects.get(name="q"),
        run_order=list(runs),
        wordlist=register_wordlist(),
        representative_wordlist=register_wordlist(default_representative_wordlist()),
        tokenizer="words",
        cutoffs=list(cutoffs),
        software_version="test",
        per_query=str(path),
    )
    report.runs.set(Run.objects.filter(name__in=runs))
    return report


def test_a_plan_from_a_given_report_is_the_pure_computation_on_its_differences(world):
    stored_report(world, "pilot", bool_shift=0.05)
    plan = planning.plan_study("a", "b", "ARaB", 0.01, report="pilot", draws=1000)
    d = pilot_differences()
    assert plan["pilot"]["variant"] == "tf"  # the paper's, not bool
    assert plan["pilot"]["queries"] == 40 and plan["current_n"] == 40
    assert plan["pilot"]["mean_difference"] == pytest.approx(d.mean())
    assert plan["pilot"]["source"] == "report pilot"
    assert plan["n_queries"] == power.sample_size(d, 0.01, draws=1000).n
    assert plan["n_queries_normal"] == power.normal_sample_size(0.01, float(np.std(d, ddof=1)))
    # d up to rounding: the file holds 0.1 + d and 0.1.
    assert plan["minimum_detectable_difference"] == pytest.approx(
        power.minimum_detectable_difference(d, 40, draws=1000)
    )
    assert plan["power_at_current_n"] == pytest.approx(power.simulated_power(d, 0.01, 40, draws=1000), abs=0.002)
    assert "pooled_to_annotate" not in plan  # no pool, no pooled count
    # The claim is the power re-estimated at n on the planner's independent stream, with its s.e.
    found = power.sample_size(d, 0.01, draws=1000)
    assert (plan["simulated_power_at_n"], plan["search"]["n"]) == (found.power, found.search_n)
    se = math.sqrt(found.power * (1 - found.power) / 1000)
    assert plan["simulated_power_at_n_se"] == pytest.approx(se)
    assert plan["power_statement"] == f"power {found.power:.2f} ± {se:.2f} (Monte-Carlo s.e., 1,000 draws)"


def on_batch(report, world, widths):
    """``report`` made a report on a batch's labels (every pilot query in its set) with baseline B, and
    A's rows against B holding ``widths``: {variant: (query-only width, combined width)}."""
    batch = annotation_services.create_batch(
        f"{report.name}-labels", annotation_services.BatchSettings(), query_set=QuerySet.objects.get(name="q")
    )
    labels = world / f"{report.name}-labels.parquet"
    pl.DataFrame(
        {"qid": QIDS, "n": [1.0] * 40, "f": [0.0] * 40, "m": [0.0] * 40, "o": [0.0] * 40,
         "source": ["crowd"] * 40, "label": ["n"] * 40, "in_set": [True] * 40}
    ).write_parquet(labels)  # fmt: skip
    report.label_batch, report.labels_file = batch, str(labels)
    report.baseline = Run.objects.get(name="b")
    report.save()
    for variant, (query, combined) in widths.items():
        Result.objects.create(
            report=report, run=Run.objects.get(name="a"), metric="ARaB", variant=variant, cutoff=10, queries=40,
            difference_low=-query / 2, difference_high=query / 2,
            difference_combined_low=-combined / 2, difference_combined_high=combined / 2,
        )  # fmt: skip
    return report


def test_a_plan_on_a_report_on_a_batchs_labels_sizes_its_combined_test(world, client, staff):
    """Issue 66, item 4: the report on a batch's labels tests by its combined interval, here twice as wide as the
    query-only one (r = 2), so the plan sizes the t-test at Δ/2: the pure computation at Δ/2, and the minimum
    detectable difference doubled. Whether the power so promised is delivered is simulated on crowds
    (tests/metrics/test_crowd_coverage.py, docs/quality.md)."""
    on_batch(stored_report(world, "pilot"), world, {"tf": (0.01, 0.02), "bool": (0.01, 0.05)})
    plan = planning.plan_study("a", "b", "ARaB", 0.01, report="pilot", draws=1000)
    d = pilot_differences()
    assert plan["label_width_factor"] == pytest.approx(2.0)  # tf's row, not bool's
    assert "report pilot, ARaB[tf]@10: a against b" in plan["label_width_factor_source"]
    assert "Δ/r, r = 2.00" in plan["test"] and plan["note"] is None
    assert plan["n_queries"] == power.sample_size(d, 0.005, draws=1000).n
    assert plan["n_queries"] > power.sample_size(d, 0.01, draws=1000).n
    assert plan["n_queries_normal"] == power.normal_sample_size(0.005, float(np.std(d, ddof=1)))
    assert plan["minimum_detectable_difference"] == pytest.approx(
        2 * power.minimum_detectable_difference(d, 40, draws=1000)
    )
    assert plan["power_at_current_n"] == pytest.approx(power.simulated_power(d, 0.005, 40, draws=1000), abs=0.002)
    sd = float(np.std(d, ddof=1))
    assert plan["minimum_detectable_difference_normal"] == pytest.approx(2 * power.normal_mdd(sd, 40))
    assert plan["power_at_current_n_normal"] == pytest.approx(power.normal_power(0.005, sd, 40))
    # Planned the other way round (B − A): the pair's own row still, not a median over the report's runs.
    reversed_plan = planning.plan_study("b", "a", "ARaB", 0.01, report="pilot", draws=500)
    assert reversed_plan["label_width_factor"] == 2.0 and reversed_plan["label_width_factor_source"].endswith(
        "a against b"
    )
    # The panel says which test it sized.
    client.force_login(staff)
    params = {"plan-report": "pilot", "plan-run_a": "a", "plan-run_b": "b", "plan-metric": "ARaB", "plan-cutoff": "10"}
    answer = client.get("/metrics/plan/", params | {"plan-delta": "0.01", "plan-power": "0.8"}).content.decode()
    assert (
        f"need about {planning.plan_study('a', 'b', 'ARaB', 0.01, report='pilot')['n_queries']} non-gendered" in answer
    )
    assert "the combined test of a report on a batch&#x27;s labels" in answer and "r = 2.00" in answer


def test_a_pair_the_report_does_not_test_takes_the_median_of_its_runs_and_says_so(world):
    """Neither planned run is the report's baseline: r is the median over the report's runs against it (here
    a: 2, c: 4, a row without a combined interval left out), and the source says the report does not test
    the pair; a pair with the baseline whose row has no interval gets no r rather than another run's."""
    report = on_batch(stored_report(world, "pilot"), world, {"tf": (0.01, 0.02)})
    for run, combined in (("c", 0.04), ("a", None)):
        Result.objects.update_or_create(
            report=report, run=Run.objects.get(name=run), metric="ARaB", variant="tf", cutoff=10,
            defaults={"queries": 40, "difference_low": -0.005, "difference_high": 0.005,
                      "difference_combined_low": None if combined is None else -combined / 2,
                      "difference_combined_high": None if combined is None else combined / 2},
        )  # fmt: skip
    Result.objects.create(
        report=report, run=Run.objects.get(name="a"), metric="ARaB", variant="bool", cutoff=10, queries=40,
        difference_low=-0.005, difference_high=0.005, difference_combined_low=-0.01, difference_combined_high=0.01,
    )  # fmt: skip
    pilot = planning.Pilot("", "pilot", "q", "a", "c", "ARaB", "tf", 10, (), None)
    found = planning.label_factor(pilot, report)
    assert found.factor == 4.0  # c's row alone: a's tf row has no combined interval now, bool is another variant
    assert "median over its 1 runs against b" in found.source and "does not test this pair" in found.source
    assert planning.label_factor(planning.Pilot("", "pilot", "q", "a", "b", "ARaB", "tf", 10, (), None), report) is None
    Result.objects.filter(report=report, run__name="a", variant="tf").update(
        difference_combined_low=-0.01, difference_combined_high=0.01
    )
    assert planning.label_factor(pilot, report).factor == pytest.approx(3.0)  # the median of 2 and 4


def test_a_report_on_a_batchs_labels_without_a_difference_says_what_the_plan_cannot_size(world):
    on_batch(stored_report(world, "pilot"), world, {})
    plan = planning.plan_study("a", "b", "ARaB", 0.01, report="pilot", draws=500)
    assert plan["label_width_factor"] is None and "paired t-test" in plan["test"]
    assert "combined test" in plan["note"] and "no difference against a baseline" in plan["note"]


def test_the_power_statement_rounds_to_the_first_significant_digit_of_its_se():
    assert planning.power_statement(0.8061, 0.00885, 2000) == "power 0.806 ± 0.009 (Monte-Carlo s.e., 2,000 draws)"
    assert planning.power_statement(0.81, 0.0124, 1000) == "power 0.81 ± 0.01 (Monte-Carlo s.e., 1,000 draws)"
    assert planning.power_statement(None, None, 2000) is None


def test_without_a_report_the_newest_on_the_query_set_holding_both_runs_and_the_cutoff(world):
    stored_report(world, "older", seed=1)
    stored_report(world, "newest-elsewhere", seed=2, cutoffs=(5,))  # lacks the cutoff 10
    stored_report(world, "only-a", runs=("a",))  # lacks run b
    plan = planning.plan_study("a", "b", "ARaB", 0.01, query_set="q", draws=200)
    assert plan["pilot"]["report"] == "older"
    assert "newest report on q" in plan["pilot"]["source"]


def test_without_any_report_the_values_are_computed_on_the_fly(world):
    plan = planning.plan_study("a", "c", "ARaB", 0.5, query_set="q", draws=200)
    assert plan["pilot"]["report"] is None
    assert "computed on the fly" in plan["pilot"]["source"]
    assert plan["pilot"]["queries"] == 3  # a and c both rank the three queries
    assert not Report.objects.exists()  # nothing stored


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"run_b": "zzz"}, "no run named 'zzz'"),
        ({"metric": "Bias"}, "unknown metric"),
        ({"delta": 0.0}, "Δ must be a positive number"),
        ({"delta": -0.1}, "Δ must be a positive number"),
        ({"report": "nope"}, "no report named"),
        ({"variant": "plain"}, "no variant 'plain'"),
        ({"cutoff": 20}, "no values of ARaB@20"),
        ({"pool": "nope"}, "no pool named"),
        ({"power_target": 0.04}, "must exceed α"),
    ],
)
def test_bad_requests_are_refused_with_a_reason(world, kwargs, message):
    stored_report(world, "pilot")
    args = {"run_a": "a", "run_b": "b", "metric": "ARaB", "delta": 0.01, "report": "pilot", "draws": 200} | kwargs
    with pytest.raises(ServiceError, match=message):
        planning.plan_study(args.pop("run_a"), args.pop("run_b"), args.pop("metric"), args.pop("delta"), **args)


def test_costs_on_each_provider_by_hand(db):
    # 250 queries, 10 per HIT, 3 assignments at $0.05: 25 HITs, 75 assignments, $3.75 of rewards.
    # in-house: no fee, $3.75; MTurk: 20% = $0.01 per assignment, 75 × $0.06 = $4.50;
    # Prolific: 33.3% of $3.75 = $1.24875 → $1.25 once on the total, $5.00; Task Builder is a Prolific
    # study (every registered platform is priced): the same fee, $5.00.
    assert planning.costs(250) == {"local": 3.75, "mturk": 4.50, "prolific": 5.00, "taskbuilder": 5.00}
    # $0.10 × 2 assignments, 5 queries per HIT, 12 queries: 3 HITs, 6 assignments, $0.60;
    # MTurk's fee $0.02 each: $0.72; Prolific $0.60 + $0.1998 → $0.20: $0.80.
    settings = planning.CostSettings(Decimal("0.10"), 2, 5)
    assert planning.costs(12, settings) == {"local": 0.60, "mturk": 0.72, "prolific": 0.80, "taskbuilder": 0.80}


def test_the_worked_example_of_the_docs(db):
    """docs/metrics.md, "Planning a study": σ = 0.05, Δ = 0.01 → 197 non-gendered queries; at the SIGIR
    2020 share 1,765/3,750 → 419 pooled (405–434 over its interval); 42 HITs × 3 assignments at $0.05:
    in-house $6.30, MTurk $7.56, Prolific $6.30 + $2.0979 → $8.40."""
    needed = power.normal_sample_size(0.01, 0.05)
    low, high = wilson_interval(1765 / 3750, 3750)
    pooled = plan_inputs.pooled_to_annotate(needed, 1765 / 3750)
    assert (needed, pooled) == (197, 419)
    assert (plan_inputs.pooled_to_annotate(needed, high), plan_inputs.pooled_to_annotate(needed, low)) == (405, 434)
    assert planning.costs(pooled) == {"local": 6.30, "mturk": 7.56, "prolific": 8.40, "taskbuilder": 8.40}


def make_pool(name="pl", size=10):
    source = QuerySet.objects.get(name="q")
    queries = create_query_set(
        f"{name}-queries", [(f"x{i}", f"query {i}") for i in range(size)], origin=QuerySet.Origin.POOL
    )
    return Pool.objects.create(
        name=name,
        source=source,
        queries=queries,
        wordlist=register_wordlist(),
        rank_cutoff=10,
        depth=5,
        magnitude="tf",
        tokenizer="words",
    )


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_user("researcher", password="pw-secret-123", is_staff=True)


def test_with_a_pool_the_share_labelled_so_far_gives_the_pooled_count_and_cost(world, staff):
    stored_report(world, "pilot")
    pool = make_pool()
    batch = annotation_services.create_batch("pool-batch", annotation_services.BatchSettings(), pool=pool)
    for i, label in enumerate(["n", "n", "n", "n", "f"]):  # 4 of 5 labelled so far are non-gendered
        adjudicate(batch, f"x{i}", label, "clear", staff)
    plan = planning.plan_study("a", "b", "ARaB", 0.01, report="pilot", pool="pl", draws=500)
    share = plan["non_gendered_share"]
    assert (share["count"], share["total"], share["share"]) == (4, 5, 0.8)
    assert (share["ci_low"], share["ci_high"]) == pytest.approx(wilson_interval(4 / 5, 5))
    assert "pool-batch" in share["source"]
    needed = plan["n_queries"]
    assert plan["pooled_to_annotate"] == math.ceil(needed / 0.8 - 1e-9)
    assert plan["pooled_to_annotate_range"] == [
        plan_inputs.pooled_to_annotate(needed, share["ci_high"]),
        plan_inputs.pooled_to_annotate(needed, share["ci_low"]),
    ]
    assert plan["cost"] == planning.costs(plan["pooled_to_annotate"])
    assert plan["machine"] is None  # nothing routed

    # After machine pre-labelling, routing accepted 3 of the batch's 10 queries: the crowd labels 70%.
    Routing.objects.create(
        batch=batch,
        labeller="rules",
        model="rules",
        prompt_version="v1",
        target_accuracy=0.9,
        accepted=["x5", "x6", "x7"],
    )
    plan = planning.plan_study("a", "b", "ARaB", 0.01, report="pilot", pool="pl", draws=500)
    machine = plan["machine"]
    assert (machine["crowd_share"]["count"], machine["crowd_share"]["total"]) == (7, 10)
    assert machine["crowd_queries"] == math.ceil(plan["pooled_to_annotate"] * 0.7 - 1e-9)
    assert machine["cost"] == planning.costs(machine["crowd_queries"])


def test_a_pool_without_labels_takes_the_sigir_2020_share_and_says_so(world):
    stored_report(world, "pilot")
    make_pool()
    plan = planning.plan_study("a", "b", "ARaB", 0.01, report="pilot", pool="pl", draws=500)
    share = plan["non_gendered_share"]
    assert (share["count"], share["total"]) == (1765, 3750)
    assert share["source"].startswith("assumed: the SIGIR 2020")
    assert plan["pooled_to_annotate"] == math.ceil(plan["n_queries"] * 3750 / 1765 - 1e-9)


def test_the_sigir_2020_default_is_the_reference_files_share(reference_dir):
    labels = [line.rsplit(",", 1)[1].strip() for line in (reference_dir / "queries_gender_annotated.csv").open()]
    assert (labels.count("n"), len(labels)) == plan_inputs.SIGIR2020_NON_GENDERED


# --- the command --------------------------------------------------------------------------------


def test_the_command_prints_json_with_the_promised_keys(world):
    stored_report(world, "pilot")
    make_pool()
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "plan_study",
        queries="q",
        runs="a,b",
        metric="ARaB",
        cutoff=10,
        delta=0.01,
        pool="pl",
        draws=500,
        json=True,
        stdout=out,
        stderr=err,
    )
    plan = json.loads(out.getvalue())
    assert {"n_queries", "minimum_detectable_difference", "power_at_current_n"} <= set(plan)
    assert {"pooled_to_annotate", "cost"} <= set(plan)
    assert set(plan["cost"]) == {"local", "mturk", "prolific", "taskbuilder"}
    assert "simulated power" in err.getvalue()  # progress goes to stderr, not into the JSON


def test_the_command_says_the_plan_in_words(world):
    stored_report(world, "pilot")
    out = io.StringIO()
    call_command(
        "plan_study", report="pilot", runs="a,b", metric="ARaB", delta=0.01, draws=500, stdout=out, stderr=io.StringIO()
    )
    text = out.getvalue()
    assert "To detect ΔARaB@10 = 0.01 with 80% power you need about" in text
    plan = planning.plan_study("a", "b", "ARaB", 0.01, report="pilot", draws=500)
    assert f"non-gendered queries: {plan['power_statement']}, re-estimated there on fresh draws" in text
    assert "minimum detectable difference" in text


@pytest.mark.parametrize("delta", ["0.055174522848548305", ".05", "5e-2", "+0.05"])
def test_the_command_reads_a_delta_as_pasted(world, delta):
    """Issue 53: ``--delta 0.055174522848548305`` (another tool's output) was refused for its 18 decimals,
    and so were ``.05`` and ``5e-2``: the command line reads them as the one decimal parser does."""
    stored_report(world, "pilot")
    out = io.StringIO()
    call_command(
        "plan_study", "--report", "pilot", "--runs", "a,b", "--metric", "ARaB", "--delta", delta, "--draws", "200",
        stdout=out, stderr=io.StringIO(),
    )  # fmt: skip
    assert f"= {float(delta):g} with 80% power" in out.getvalue()


def test_the_command_refuses_bad_input_without_a_traceback(world):
    stored_report(world, "pilot")
    with pytest.raises(CommandError, match="two runs"):
        call_command("plan_study", report="pilot", runs="a", metric="ARaB", delta=0.01)
    with pytest.raises(CommandError, match="Δ must be a positive number"):
        call_command("plan_study", report="pilot", runs="a,b", metric="ARaB", delta=-1, stderr=io.StringIO())


# --- the API --------------------------------------------------------------------------------------


@pytest.fixture
def api(client, staff):
    client.force_login(staff)

    def post(body):
        return client.post("/api/metrics/plan/", body, content_type="application/json")

    return post


def test_the_api_gives_the_plan(world, api):
    stored_report(world, "pilot")
    make_pool()
    response = api({"runs": ["a", "b"], "metric": "ARaB", "delta": 0.01, "report": "pilot", "pool": "pl", "draws": 500})
    assert response.status_code == 200, response.content
    body = response.json()
    assert {"n_queries", "minimum_detectable_difference", "power_at_current_n", "pooled_to_annotate", "cost"} <= set(
        body
    )
    assert body["n_queries"] == planning.plan_study("a", "b", "ARaB", 0.01, report="pilot", draws=500)["n_queries"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"runs": ["a", "zzz"]}, "run_b"),
        ({"runs": ["a"]}, "runs"),
        ({"runs": ["a", "a"]}, "run_b"),
        ({"metric": "Bias"}, "metric"),
        ({"delta": 0}, "delta"),
        ({"delta": -0.5}, "delta"),
        ({"delta": "much"}, "delta"),
        ({"report": "nope"}, "report"),
        ({"pool": "nope"}, "pool"),
        ({"power": 1.5}, "power"),
        ({"draws": 10}, "draws"),
        ({"draws": 5000}, "draws"),  # a request simulates at most 2,000 studies per size
        ({"variant": "plain"}, "detail"),  # the pilot refuses: a ServiceError, 400 with detail
        ({"cutoff": 20}, "detail"),
    ],
)
def test_the_api_refuses_bad_input_with_json_4xx(world, api, change, field):
    stored_report(world, "pilot")
    body = {"runs": ["a", "b"], "metric": "ARaB", "delta": 0.01, "report": "pilot", "draws": 200} | change
    response = api(body)
    assert response.status_code == 400, response.content
    assert field in response.json()


def test_a_request_plans_on_a_stored_report_and_never_builds_one(world, api):
    """Building a pilot over a whole query set is a job's work, not a request's: the API says so."""
    response = api({"runs": ["a", "b"], "metric": "ARaB", "delta": 0.01, "queries": "q", "draws": 200})
    assert response.status_code == 400
    assert "no stored report" in response.json()["detail"]


def test_the_api_says_when_a_difference_is_out_of_reach(world, api):
    stored_report(world, "pilot")
    response = api({"runs": ["a", "b"], "metric": "ARaB", "delta": 1e-300, "report": "pilot", "draws": 200})
    assert response.status_code == 200
    assert response.json()["n_queries"] is None


def test_the_api_is_for_researchers(world, client, django_user_model):
    client.force_login(django_user_model.objects.create_user("annotator", password="pw-secret-123"))
    response = client.post("/api/metrics/plan/", {}, content_type="application/json")
    assert response.status_code == 403 and "detail" in response.json()


# --- the batch-creation page ----------------------------------------------------------------------


def test_the_batch_page_loads_the_panel_and_the_panel_says_the_plan(world, client, staff):
    client.force_login(staff)
    stored_report(world, "pilot")
    make_pool()
    page = client.get("/annotation/batches/new/")
    assert page.status_code == 200
    assert 'hx-get="/metrics/plan/"' in page.content.decode()  # the panel, loaded beside the batch form

    empty = client.get("/metrics/plan/")
    assert empty.status_code == 200 and 'id="plan-form"' in empty.content.decode()
    assert 'name="plan-delta"' in empty.content.decode()  # prefixed: the batch form has its own fields

    # The panel's fields and, through hx-include, the batch form's pool and pay.
    params = {
        "plan-report": "pilot",
        "plan-run_a": "a",
        "plan-run_b": "b",
        "plan-metric": "ARaB",
        "plan-cutoff": "10",
        "plan-delta": "0.01",
        "plan-power": "0.8",
        "pool": "pl",
        "provider": "mturk",
        "reward": "0.05",
        "assignments_per_query": "3",
        "queries_per_hit": "10",
    }
    answer = client.get("/metrics/plan/", params).content.decode()
    plan = planning.plan_study("a", "b", "ARaB", 0.01, report="pilot", pool="pl")
    sentence = (
        f"To detect ΔARaB@10 = 0.01 with 80% power you need about {plan['n_queries']} non-gendered queries: "
        f"annotate about {plan['pooled_to_annotate']} pooled queries, about ${plan['cost']['mturk']:.2f}."
    )
    assert sentence in answer
    assert f"{plan['power_statement']}, re-estimated on fresh draws" in answer
    assert plan["pool_queries"] == 10 and plan["pooled_to_annotate"] > 10
    assert "The pool holds 10 queries: too few" in answer

    refused = client.get("/metrics/plan/", params | {"plan-delta": "-1"}).content.decode()
    assert "Δ must be a positive number" in refused and "To detect" not in refused


def _labelled(batch, labels, staff):
    for i, label in enumerate(labels):
        adjudicate(batch, f"x{i}", label, "clear", staff)


def test_each_pool_plans_with_its_own_share_never_another_pools(world, staff):
    """Issue 58: plan_study took another pool's non-gendered share (0.136 where the pool's was 0.203).
    Two pools of different shares: pool "one" labelled on a batch made on the pool (4 of 5 non-gendered),
    pool "two" on a batch made on its pooled query set with no pool named (1 of 5); the pilot's query set
    is the export of pool one's labels. Each plans with its own share, counted here from the labels given;
    a third pool without labels takes the stated SIGIR 2020 share, not pool one's export."""
    from annotation.models import Export

    stored_report(world, "pilot")
    one, two = make_pool("one"), make_pool("two")
    first = annotation_services.create_batch("one-batch", annotation_services.BatchSettings(), pool=one)
    _labelled(first, ["n", "n", "n", "n", "f"], staff)
    second = annotation_services.create_batch("two-batch", annotation_services.BatchSettings(), query_set=two.queries)
    _labelled(second, ["m", "f", "n", "o", "f"], staff)
    Export.objects.create(  # the pilot's query set "q" made by exporting pool one's labels: 8 of 10 non-gendered
        batch=first,
        path="x",
        card_path="x",
        format="csv",
        category="all",
        queries=10,
        counts={"n": 8, "f": 1, "m": 1, "o": 0},
        card="",
        query_set=QuerySet.objects.get(name="q"),
    )
    expected = {"one": (4, 5), "two": (1, 5)}
    for name, (count, total) in expected.items():
        plan = planning.plan_study("a", "b", "ARaB", 0.01, report="pilot", pool=name, draws=200)
        share = plan["non_gendered_share"]
        assert (share["count"], share["total"]) == (count, total), name
        assert f"{name}-batch" in share["source"]
        assert plan["pooled_to_annotate"] == math.ceil(plan["n_queries"] * total / count - 1e-9)
    make_pool("three")
    share = planning.plan_study("a", "b", "ARaB", 0.01, report="pilot", pool="three", draws=200)["non_gendered_share"]
    assert (share["count"], share["total"]) == plan_inputs.SIGIR2020_NON_GENDERED
    assert share["source"].startswith("assumed: the SIGIR 2020")


# --- the audit sample (issue 81, item 6) ------------------------------------------------------------


def _audit_size(sd, share, width, batch):
    """⌈(2 z σ / w)² / share⌉ with z from scipy (not the code under test), at least the site's default audit of
    the batch: ⌈25 / share⌉, at least 50, at most the batch (genderbias.crowd.audit_size.suggested_audit_size)."""
    from scipy.stats import norm

    return max(math.ceil((2 * norm.ppf(0.975) * sd / width) ** 2 / share), min(batch, max(50, math.ceil(25 / share))))


def test_the_plan_sizes_the_audit_sample_and_its_hours(world, staff):
    """The pilot's sd σ ≈ 0.016, no pool: the SIGIR 2020 share 1,765/3,750, said so; the planned batch ⌈n / share⌉;
    the audit for a difference's interval Δ wide (0.01: the width asks for 83, the site's default ⌈25 / share⌉ =
    54 capped by the batch), and its hours at 20 s a query. A width given and 30 s: its own size and hours. With
    a pool 4 of 5 non-gendered so far and Δ = 0.04: that share, and the whole small batch (below 50)."""
    stored_report(world, "pilot")
    sd = float(np.std(pilot_differences(), ddof=1))
    plan = planning.plan_study("a", "b", "ARaB", 0.01, report="pilot", draws=200)
    audit = plan["audit"]
    batch = math.ceil(plan["n_queries"] * 3750 / 1765)
    assert audit["batch_queries"] == batch
    size = _audit_size(sd, 1765 / 3750, 0.01, batch)
    assert audit["size"] == size == 83 and audit["minimum"] == min(batch, 54)
    assert audit["whole_batch"] == (size >= batch)
    assert audit["hours"] == pytest.approx(size * 20 / 3600)
    assert audit["non_gendered_share_source"].startswith("assumed: SIGIR 2020")
    assert audit["target_width"] == 0.01 and audit["target_width_source"] == "Δ (default)"

    given = planning.plan_study("a", "b", "ARaB", 0.01, report="pilot", draws=200, audit_width=0.004, audit_seconds=30)
    assert given["audit"]["size"] == _audit_size(sd, 1765 / 3750, 0.004, batch) == 519
    assert given["audit"]["target_width_source"] == "given"
    assert given["audit"]["hours"] == pytest.approx(519 * 30 / 3600)

    pool = make_pool()
    labelled = annotation_services.create_batch("pool-batch", annotation_services.BatchSettings(), pool=pool)
    _labelled(labelled, ["n", "n", "n", "n", "f"], staff)
    pooled = planning.plan_study("a", "b", "ARaB", 0.04, report="pilot", pool="pl", draws=200)
    audit = pooled["audit"]
    assert audit["non_gendered_share"] == 0.8 and audit["batch_queries"] == pooled["pooled_to_annotate"] < 50
    assert audit["size"] == _audit_size(sd, 0.8, 0.04, pooled["pooled_to_annotate"]) == audit["batch_queries"]
    assert audit["whole_batch"]
    with pytest.raises(ServiceError, match="audit's target width"):
        planning.plan_study("a", "b", "ARaB", 0.01, report="pilot", draws=200, audit_width=0.0)


def test_the_command_the_api_and_the_panel_show_the_audit_sample(world, client, staff):
    stored_report(world, "pilot")
    n = planning.plan_study("a", "b", "ARaB", 0.01, report="pilot", draws=200)["n_queries"]
    batch = math.ceil(n * 3750 / 1765)  # the planned batch, smaller than the audit here: the command says so
    size = _audit_size(float(np.std(pilot_differences(), ddof=1)), 1765 / 3750, 0.01, batch)
    assert batch <= size
    out = io.StringIO()
    call_command(
        "plan_study", "--report", "pilot", "--runs", "a,b", "--metric", "ARaB", "--delta", "0.01", "--draws", "200",
        "--audit-seconds", "36", stdout=out, stderr=io.StringIO(),
    )  # fmt: skip
    assert (
        f"Audit sample: {size} queries labelled by an expert (the whole batch: audit it all, the crowd adds "
        f"nothing), about {size * 36 / 3600:.1f} h at 36 s a query"
    ) in out.getvalue()

    client.force_login(staff)
    body = {"runs": ["a", "b"], "metric": "ARaB", "delta": 0.01, "report": "pilot", "draws": 200}
    answer = client.post("/api/metrics/plan/", body | {"audit_seconds": 36}, content_type="application/json")
    assert answer.status_code == 200, answer.content
    assert (answer.json()["audit"]["size"], answer.json()["audit"]["hours"]) == (size, pytest.approx(size / 100))
    for bad in ({"audit_width": 0}, {"audit_width": "wide"}, {"audit_seconds": 0}):
        refused = client.post("/api/metrics/plan/", body | bad, content_type="application/json")
        assert refused.status_code == 400 and set(bad) <= set(refused.json()), refused.content

    params = {"plan-report": "pilot", "plan-run_a": "a", "plan-run_b": "b", "plan-metric": "ARaB", "plan-cutoff": "10"}
    page = client.get("/metrics/plan/", params | {"plan-delta": "0.01", "plan-draws": "200"}).content.decode()
    assert f'id="plan-audit">Audit sample: {size} queries labelled by an expert' in page
    assert 'name="plan-audit_width"' in page and 'name="plan-audit_seconds"' in page
