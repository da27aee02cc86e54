import json
import tempfile
import time
from decimal import Decimal
from pathlib import Path

import numpy as np
from django.core.management.base import CommandError
from django.test.utils import override_settings

from annotation import services
from annotation.models import Assignment, Batch
from annotation.selectors import batch_state, labels_with_sources
from benchmarks.site_server import annotator_accounts, refuse_real_batches, served
from core.management.cli import ProjectCommand, command_errors
from genderbias.crowd.simulation.escalation import ReferenceRule
from genderbias.labels import LABELS
from genderbias.machine.routing_forecast import simulate_path
from pooling.models import QuerySet
from pooling.services import create_query_set
from tests.annotation.machine.openai_server import FakeOpenAI, serve
from tests.support.routing_path import (
    SAMPLES,
    chat_answers,
    crowd_file_data,
    label_and_confidence,
    platform_crowd,
    truth_queries,
    vote,
)
from tests.support.virtual_annotator import VirtualAnnotator

PREFIX = "routing-bench-"
PASSWORD = "routing-benchmark-password"
#: GPT-4o's list prices (USD per million tokens) for the machine's cost.
PROMPT_PRICE, COMPLETION_PRICE = Decimal("2.50"), Decimal("10.00")
MACHINE_SEED = 5


class Command(ProjectCommand):
    help = (
        "The whole machine path against a noisy crowd (three votes from twelve workers right 0.9 of the time, two "
        "spammers, a lazy worker; tests/support/routing_path.py) on the study's labelled queries: a chat model sampled "
        "16 times pre-labels the batch, a blind sample drawn whole is labelled by the crowd with its undecided "
        "queries escalated (up to 7 assignments), routing certifies the target, the rest goes to the crowd. "
        "Simulated on --redraws redraws of the sample (genderbias.machine.routing_forecast), then --http times for "
        "real: the chat labeller against a fake OpenAI-compatible server over HTTP, the crowd as in-house annotators "
        "posting the HIT form to gunicorn, synced and escalated by the services, beside crowd-only labelling of the "
        "same queries; and route_audit's forecast on the last real batch with the same crowd model. Prints the share "
        "the machines keep, the export's accuracy against the true labels, the cost against crowd-only and the "
        "share of runs whose machine-kept labels fall below the target against the true labels (with its "
        "Monte-Carlo error). Run it on a throw-away database: bin/benchmark-routing makes one."
    )

    def add_arguments(self, parser):
        parser.add_argument("--queries", type=int, default=1000, help="queries of the batch (default 1000)")
        parser.add_argument("--sample", type=int, default=300, help="blind sample (default 300)")
        parser.add_argument("--target", type=float, default=0.9, help="target accuracy (default 0.9)")
        parser.add_argument("--risk", type=float, default=0.05, help="the guarantee's δ (default 0.05)")
        parser.add_argument("--redraws", type=int, default=500, help="simulated redraws (default 500)")
        parser.add_argument("--http", type=int, default=3, help="runs over real HTTP (default 3; 0: none)")
        parser.add_argument("--reward", default="0.12", help="USD per HIT of 10 queries (default 0.12)")
        parser.add_argument("--audit-redraws", type=int, default=200, help="route_audit's redraws (default 200)")
        parser.add_argument("--workers", type=int, default=2, help="gunicorn workers (default 2)")
        parser.add_argument("--threads", type=int, default=2, help="threads per gunicorn worker (default 2)")

    def handle(self, **o):
        if o["queries"] < 2 * o["sample"] or o["sample"] < 10 or o["redraws"] < 1 or o["http"] < 0:
            raise CommandError("need --queries ≥ 2 × --sample, --sample ≥ 10, --redraws ≥ 1, --http ≥ 0")
        rows, source = truth_queries(o["queries"])
        truth = np.array([LABELS.index(label) for _, _, label in rows])
        answers = chat_answers(truth, MACHINE_SEED)
        label, confidence = label_and_confidence(answers)
        out = self.stdout.write
        out(
            f"{len(rows)} queries ({source} labels), machine {np.mean(label == truth):.3f} right against them; crowd: "
            f"12 workers right 0.9, 2 spammers, 1 lazy (always n, twice the share); 3 votes, HITs of 10, "
            f"${o['reward']} per HIT; target {o['target']}, δ {o['risk']}, a {o['sample']}-query sample drawn whole"
        )
        simulated = self._simulate(truth, label, confidence, o)
        runs, audit = [], None
        if o["http"]:
            refuse_real_batches(PREFIX, " (bin/benchmark-routing makes one)")
            with command_errors():
                runs, audit = self._over_http(rows, truth, answers, o)
        self._criteria(simulated, runs, audit, o)

    # -- simulated ------------------------------------------------------------------------------------
    def _simulate(self, truth, label, confidence, o) -> dict:
        crowd = platform_crowd(np.bincount(truth, minlength=len(LABELS)) / len(truth))
        size = len(truth)
        started = time.monotonic()
        forecast = simulate_path(
            truth,
            [label],
            [confidence],
            crowd=crowd,
            rule=ReferenceRule(3, 7),
            sample_of=lambda r: np.random.default_rng(r).permutation(size)[: o["sample"]],
            redraws=o["redraws"],
            target=o["target"],
            risk=o["risk"],
            seed=1,
        )
        reward = Decimal(o["reward"])
        machine = _machine_cost(size)
        path_cost = Decimal(str(forecast.assignments)) * reward + machine
        crowd_only = Decimal(str(forecast.crowd_only_assignments)) * reward
        result = forecast.as_dict() | {
            "path_cost": float(path_cost),
            "crowd_only_cost": float(crowd_only),
            "seconds": time.monotonic() - started,
        }
        out = self.stdout.write
        out("")
        out(f"Simulated: {forecast.redraws} redraws ({result['seconds']:.0f} s)")
        out(
            f"  machine-kept share   {forecast.kept_share:.3f} ± {forecast.kept_share_se:.3f} (certified in {forecast.certified_rate:.3f})"
        )
        out(
            f"  below target         {forecast.violation_rate_truth:.4f} against the truth, {forecast.violation_rate:.4f} "
            f"against the reference (Monte-Carlo s.e. at δ {forecast.violation_se:.4f})"
        )
        out(f"  machine-kept labels  {_fmt(forecast.machine_accuracy_truth)} right against the truth")
        out(
            f"  sample               {forecast.first_round_split:.3f} split after 3 votes, "
            f"{forecast.undecided_share:.4f} undecided after escalation; reference {forecast.reference_accuracy:.3f} right"
        )
        out(f"  export accuracy      {forecast.export_accuracy:.4f} (crowd only {forecast.crowd_only_accuracy:.4f})")
        out(
            f"  cost                 ${path_cost:.2f} (machine ${machine:.2f}) against ${crowd_only:.2f} crowd only: "
            f"{path_cost / crowd_only:.3f}"
        )
        return result

    # -- over HTTP ------------------------------------------------------------------------------------
    def _over_http(self, rows, truth, answers, o):
        crowd = platform_crowd()
        accounts = self._accounts(crowd)
        fake = FakeOpenAI(answers={text: [LABELS[a] for a in answers[:, i]] for i, (_, text, _) in enumerate(rows)})
        api, fake_server = serve(fake)
        runs = []
        labels_file = Path(tempfile.mkstemp(prefix="routing-truth-", suffix=".tsv")[1])
        labels_file.write_text("".join(f"{qid}\t{text}\t{label}\n" for qid, text, label in rows), encoding="utf-8")
        settings = {
            "PRELABEL_API_URL": api,
            "PRELABEL_API_KEY": "sk-test",
            "PRELABEL_MODEL": fake.model,
            "PRELABEL_SAMPLES": SAMPLES,
            "PRELABEL_TEMPERATURE": 1.0,
            "PRELABEL_PROMPT_PRICE": PROMPT_PRICE,
            "PRELABEL_COMPLETION_PRICE": COMPLETION_PRICE,
        }
        self.stdout.write("")
        try:
            with (
                served(
                    "routing",
                    workers=o["workers"],
                    threads=o["threads"],
                    say=lambda line: self.stdout.write(f"Over HTTP: {line}"),
                    detail=f", the chat labeller against a fake OpenAI-compatible server at {api}",
                ) as (port, _server),
                override_settings(**settings),
            ):
                for run in range(o["http"]):
                    runs.append(self._one_run(run, rows, truth, crowd, accounts, f"http://127.0.0.1:{port}", o))
        finally:
            fake_server.shutdown()
        audit = self._audit(runs[-1]["batch"], labels_file, o) if runs else None
        return runs, audit

    def _accounts(self, crowd) -> list[dict]:
        names = annotator_accounts([f"{PREFIX}{name}" for name in crowd.names], PASSWORD, reuse=True)
        return [
            {"name": name, "confusion": crowd.confusion[i], "share": float(crowd.shares[i])}
            for i, name in enumerate(names)
        ]

    def _one_run(self, run, rows, truth, crowd, accounts, base_url, o) -> dict:
        started = time.monotonic()
        rng = np.random.default_rng(100 + run)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        name = f"{PREFIX}{stamp}-{run}"
        true_label = {qid: label for qid, _, label in rows}
        query_set = create_query_set(name, [(qid, text) for qid, text, _ in rows], origin=QuerySet.Origin.IMPORTED)
        batch_settings = services.BatchSettings(reward=Decimal(o["reward"]))
        batch = services.create_batch(name, batch_settings, query_set=query_set)
        summary = services.prelabel_batch(batch, "openai")
        sample = services.create_calibration_sample(batch, o["sample"], seed=run)
        services.publish_batch(sample)
        clients = [VirtualAnnotator(base_url, a["name"], PASSWORD, seed=run * 100 + i) for i, a in enumerate(accounts)]
        for client in clients:
            client.login()
        rounds = 0
        while True:
            self._annotate(clients, accounts, true_label, rng)
            services.sync_batch(sample)
            rounds += 1
            plan = services.plan_routing(batch, o["target"], risk=o["risk"])
            if not plan.awaiting_votes or rounds > 12:
                break
        routing = services.route_batch(batch, o["target"], plan=plan)
        if routing.routed_batch is not None:
            services.publish_batch(routing.routed_batch)
            self._until_done(routing.routed_batch, clients, accounts, true_label, rng)
        final = labels_with_sources(batch)
        qids = [qid for qid, _, _ in rows]
        drawn = sample.derivation["order"]
        reference = float(np.mean([q in final and final[q].label == true_label[q] for q in drawn]))
        export_accuracy = float(np.mean([final[q].label == true_label[q] if q in final else False for q in qids]))
        kept = routing.accepted
        kept_truth = float(np.mean([final[q].label == true_label[q] for q in kept])) if kept else None
        spent = batch_state(batch)["spent"]
        # What the chat model's answers cost when first asked for (later runs read them from the cache and
        # pay nothing; a study pays once): the fake's usage at GPT-4o's prices, as in the simulation.
        paid = Decimal(str(summary.usage.cost)).quantize(Decimal("0.01"))
        machine = _machine_cost(len(rows))
        # Crowd only: the same queries, the same crowd and the same rule for undecided queries.
        alone = services.create_batch(f"{name}-crowd", batch_settings, query_set=query_set)
        services.follow_reference(alone, sample.derivation["reference"])
        alone.refresh_from_db()
        services.publish_batch(alone)
        self._until_done(alone, clients, accounts, true_label, rng)
        crowd_labels = labels_with_sources(alone)
        crowd_accuracy = float(np.mean([q in crowd_labels and crowd_labels[q].label == true_label[q] for q in qids]))
        alone_spent = batch_state(alone)["spent"]
        for client in clients:
            client.close()
        result = {
            "batch": batch,
            "kept_share": len(kept) / len(qids),
            "below_target": kept_truth is not None and kept_truth < o["target"],
            "export_accuracy": export_accuracy,
            "crowd_only_accuracy": crowd_accuracy,
            "cost": spent + machine,
            "crowd_only_cost": alone_spent,
            "seconds": time.monotonic() - started,
        }
        self.stdout.write(
            f"  run {run}: kept {result['kept_share']:.3f} (threshold {_fmt(routing.threshold)}, kept labels "
            f"{_fmt(kept_truth)} right; sample's reference {reference:.3f} right), export {export_accuracy:.4f} vs crowd only {crowd_accuracy:.4f}, "
            f"${result['cost']:.2f} (machine ${machine}, paid this run ${paid}) vs ${alone_spent:.2f}, {rounds} sample round(s), "
            f"{result['seconds']:.0f} s"
        )
        return result

    def _annotate(self, clients, accounts, true_label, rng) -> None:
        """Every worker takes HITs (the next one chosen by share) until none has anything left to do."""
        active = list(range(len(clients)))
        while active:
            shares = np.array([accounts[i]["share"] for i in active])
            i = active[int(rng.choice(len(active), p=shares / shares.sum()))]
            hit = clients[i].next_hit()
            if hit is None:
                active.remove(i)
                continue
            form = {
                field: LABELS[vote(accounts[i]["confusion"], LABELS.index(true_label[qid]), rng)]
                for field, qid in _fields(hit.assignment).items()
                if field in hit.fields
            }
            if not clients[i].submit(hit, form):
                raise CommandError(f"the site refused {accounts[i]['name']}'s answers to assignment {hit.assignment}")

    def _until_done(self, batch, clients, accounts, true_label, rng) -> None:
        """Answer, sync (an escalation round each time), again, until the batch asks for nothing more."""
        for _ in range(12):
            self._annotate(clients, accounts, true_label, rng)
            result = services.sync_batch(batch)
            batch.refresh_from_db()
            if not result.escalated and batch.status == Batch.Status.COMPLETED:
                return

    def _audit(self, batch, labels_file, o) -> dict:
        crowd_file = Path(tempfile.mkstemp(prefix="routing-crowd-", suffix=".json")[1])
        crowd_file.write_text(json.dumps(crowd_file_data()), encoding="utf-8")
        started = time.monotonic()
        result = services.audit_routing(
            batch,
            str(labels_file),
            o["target"],
            risk=o["risk"],
            sample=o["sample"],
            redraws=o["audit_redraws"],
            crowd=str(crowd_file),
        )
        result["seconds"] = time.monotonic() - started
        self.stdout.write(
            f"  route_audit --crowd {crowd_file.name} on {batch.name}: machine-kept share {result['machine_labelled_share']:.3f}"
            f" ± {result['kept_share_se']:.3f} ({result['redraws']} redraws, {result['seconds']:.0f} s)"
        )
        return result

    # -- the criteria ---------------------------------------------------------------------------
    def _criteria(self, simulated: dict, runs: list[dict], audit: dict | None, o) -> None:
        out = self.stdout.write
        out("")

        def shared(where: str, kept: float, kept_text: str, export: float, alone: float, cost: float) -> list:
            """The checks the simulation and the runs over HTTP both answer (``where``: theirs, and how averaged)."""
            return [
                (f"machine-kept share ≥ 0.40 ({where[0]} mean)", kept >= 0.40, kept_text),
                (
                    f"export at least as accurate as crowd only ({where[1]})",
                    export >= alone,
                    f"{export:.4f} vs {alone:.4f}",
                ),
                (f"cost ≤ 60% of crowd only ({where[0]})", cost <= 0.6, f"{cost:.3f}"),
            ]

        s = simulated
        checks = shared(
            ("simulated", "simulated"),
            s["kept_share"],
            f"{s['kept_share']:.3f}",
            s["export_accuracy"],
            s["crowd_only_accuracy"],
            s["path_cost"] / s["crowd_only_cost"],
        )
        checks.append(
            (
                "runs below the target against the truth ≤ δ (simulated)",
                s["violation_rate_truth"] <= o["risk"],
                f"{s['violation_rate_truth']:.4f} (s.e. {s['violation_se']:.4f})",
            )
        )
        if runs:
            kept, export, alone = (
                float(np.mean([r[k] for r in runs])) for k in ("kept_share", "export_accuracy", "crowd_only_accuracy")
            )
            kept_se = (
                float(np.std([r["kept_share"] for r in runs], ddof=1) / np.sqrt(len(runs))) if len(runs) > 1 else 0.0
            )
            cost = sum(r["cost"] for r in runs) / sum(r["crowd_only_cost"] for r in runs)
            checks += shared(
                ("HTTP", "HTTP mean"), kept, f"{kept:.3f} ± {kept_se:.3f} over {len(runs)} runs", export, alone, cost
            )
            below = sum(r["below_target"] for r in runs)
            checks.append(("runs below the target against the truth (HTTP)", True, f"{below} of {len(runs)}"))
        if audit is not None:
            gap = abs(audit["machine_labelled_share"] - simulated["kept_share"])
            checks.append(
                (
                    "route_audit's forecast within 0.05 of the benchmark's kept share",
                    gap <= 0.05,
                    f"{audit['machine_labelled_share']:.3f} vs {simulated['kept_share']:.3f} simulated"
                    + (f", {np.mean([r['kept_share'] for r in runs]):.3f} over HTTP" if runs else ""),
                )
            )
        width = max(len(name) for name, _, _ in checks)
        for name, ok, value in checks:
            out(f"  {'met ' if ok else 'MISS'}  {name:<{width}}  {value}")


def _fields(assignment: int) -> dict[str, str]:
    """field name -> qid of the HIT behind ``assignment`` (what the worker reads on the page)."""
    hit = Assignment.objects.select_related("hit").get(pk=assignment).hit
    return {hq.field_name: hq.batch_query.qid for hq in hit.hit_queries.select_related("batch_query")}


def _machine_cost(queries: int) -> Decimal:
    """What the fake server's usage costs at GPT-4o's prices: 20 prompt tokens a request and a completion token
    a choice, one request of 16 choices a query."""
    per_query = (20 * PROMPT_PRICE + SAMPLES * COMPLETION_PRICE) / Decimal(1_000_000)
    return (per_query * queries).quantize(Decimal("0.01"))


def _fmt(value) -> str:
    return "none" if value is None else f"{value:.3f}"
