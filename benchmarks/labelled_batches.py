"""Benchmark: the daily steps after a study's answers come in, each a fresh process (issue 57, item 5).

Builds once, in ``DIR`` (kept for reruns), the held-out study's data registered with the commands, a crowd
batch answered by three simulated annotators and a machine-labelled batch whose calibration sample they
answered. Then measures each step on a fresh copy of that state (so every step is a *first* one: no results
cache, no word counts) in its own process, its wall and CPU seconds and peak memory: the two batches'
``export_queries``, the calibration report's first view, job and next view (:func:`calibration_view`), and the
first label-corrected report (``sync_batch``, then ``bias_report --from-batch``). What each step is and its
figures: docs/benchmarks.md, "The steps after a study's answers". Prints one line per step and a Markdown
table; Django is set up only in the children.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.fullsize import run_command
from benchmarks.measure import ROOT, load_average, setup_django

RUNS = 7
CUTOFFS = "5,10,20,30"
PASSAGES = 200_000


def _env(state: Path) -> dict[str, str]:
    return dict(
        os.environ,
        DJANGO_DEBUG=os.environ.get("DJANGO_DEBUG", "1"),
        VAR_DIR=str(state / "var"),
        DATABASE_URL=f"sqlite:///{state / 'db.sqlite3'}",
    )


def build(state: Path, queries: int, sample: int) -> None:
    """The registered study with its two batches answered (in this process; ``state`` is new)."""
    os.environ.update(_env(state))
    setup_django()
    from django.core.management import call_command

    from annotation import services
    from annotation.machine.services.calibration import create_calibration_sample
    from annotation.machine.services.prelabels import prelabel_batch
    from platforms.inhouse.services.simulation import simulate_local_annotations
    from pooling.models import QuerySet
    from pooling.synthetic import SyntheticSpec, write_collection, write_queries, write_runs

    data = state / "data"
    data.mkdir(parents=True, exist_ok=True)
    spec = SyntheticSpec(passages=PASSAGES, queries=queries, runs=RUNS, depth=100)
    write_collection(data / "collection.tsv", spec)
    write_queries(data / "queries.tsv", spec)
    runs = write_runs(data, data / "queries.tsv", spec)
    call_command("migrate", verbosity=0)
    call_command("import_collection", str(data / "collection.tsv"), name="c", verbosity=0)
    call_command("import_queries", str(data / "queries.tsv"), name="q", verbosity=0)
    call_command("import_run", *map(str, runs), collection="c", verbosity=0)
    query_set = QuerySet.objects.get(name="q")
    settings = services.BatchSettings()
    crowd = services.create_batch("crowd", settings, query_set=query_set)
    services.publish_batch(crowd)
    simulate_local_annotations(crowd, annotators=3, accuracy=0.85, seed=3, prefix="crowd")
    machine = services.create_batch("machine", settings, query_set=query_set)
    prelabel_batch(machine, "rules")
    calibration = create_calibration_sample(machine, sample, seed=1)
    services.publish_batch(calibration)
    simulate_local_annotations(calibration, annotators=3, accuracy=0.85, seed=2, prefix="sample")


def calibration_view() -> None:
    """Child: the calibration page in one new process, as a researcher meets it after new answers.

    Prints five CPU times: the heavy libraries imported as gunicorn's master and a Celery worker's main process
    import them before forking (:func:`config.celery.import_heavy_libraries`), the first view (it finds no kept
    report and starts the report's job), the job's work, the next view (reads the kept report), and the report
    computed again in this process; then what the first view showed.
    """
    import resource

    def cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    os.environ["JOB_LOCAL_RUNNER"] = "inline"  # the job in this thread, at the commit: its CPU measured apart
    setup_django()
    from config.celery import import_heavy_libraries

    before = cpu()
    import_heavy_libraries()
    preload_cpu = cpu() - before
    from django.contrib.auth import get_user_model
    from django.db import transaction
    from django.test import RequestFactory

    from annotation.machine import views
    from annotation.machine.services.background import report_with_figures
    from annotation.models import Batch

    batch = Batch.objects.get(name="machine")
    request = RequestFactory().get(f"/annotation/batches/{batch.name}/calibration/")
    request.user = get_user_model().objects.create_user("bench", is_staff=True)
    start = cpu()
    with transaction.atomic():  # the view's work, then the job's at the commit (as a worker would run it)
        first = views._calibration_context(request, batch)
        viewed = cpu()
    after_job = cpu()
    view_cpu, job_cpu = viewed - start, after_job - viewed
    shown = "computing" if first["job"] else first["waiting"] or "shown"
    second = views._calibration_context(request, batch)
    next_cpu = cpu() - after_job
    if second["report"] is None:
        raise RuntimeError(f"the report was not kept: {second['waiting'] or second['job']}")
    middle = cpu()
    report_with_figures(batch)  # computed again, libraries loaded
    print(f"{preload_cpu:.3f} {view_cpu:.3f} {job_cpu:.3f} {next_cpu:.3f} {cpu() - middle:.3f} {shown}")


def _fresh(built: Path, work: Path, name: str) -> Path:
    """A copy of the built state (database and data folder), so the step is a first one."""
    target = work / name
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    shutil.copy2(built / "db.sqlite3", target / "db.sqlite3")
    shutil.copytree(built / "var", target / "var", symlinks=True)
    return target


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", required=True, help="folder for the data and the copies (kept for reruns)")
    parser.add_argument("--queries", type=int, default=3750)
    parser.add_argument("--sample", type=int, default=300, help="the machine batch's calibration sample")
    parser.add_argument("mode", nargs="?", default="measure", help=argparse.SUPPRESS)
    o = parser.parse_args(argv)
    if o.mode == "calibration":
        calibration_view()
        return
    work = Path(o.work).resolve()
    built = work / f"built-{o.queries}-{o.sample}"
    if o.mode == "build":
        build(built, o.queries, o.sample)
        return
    if not (built / "db.sqlite3").exists():
        print(f"Building the study ({o.queries:,} queries, sample {o.sample}) in {built} …", flush=True)
        started = time.perf_counter()
        shutil.rmtree(built, ignore_errors=True)
        built.mkdir(parents=True)
        subprocess.run(
            [sys.executable, "-m", "benchmarks.labelled_batches", "--work", str(work), "--queries", str(o.queries),
             "--sample", str(o.sample), "build"],
            check=True, cwd=ROOT, env=_env(built),
        )  # fmt: skip
        print(f"  built in {time.perf_counter() - started:.0f} s", flush=True)
    print(f"Measuring (load average {load_average()}):", flush=True)
    rows: list[tuple[str, float, float, float]] = []

    def step(label: str, state: Path, arguments: list[str]) -> None:
        seconds, cpu, peak = run_command(arguments, _env(state), ROOT)
        rows.append((label, seconds, cpu, peak))
        print(f"  {label}: {seconds:.1f} s, {cpu:.2f} s CPU, {peak:,.0f} MB", flush=True)

    for batch in ("crowd", "machine"):
        state = _fresh(built, work, f"export-{batch}")
        out = state / f"{batch}.tsv"
        step(f"`export_queries {batch} --category non-gendered`", state, [
            "export_queries", batch, "--category", "non-gendered", "--out", str(out)])  # fmt: skip
    state = _fresh(built, work, "calibration")
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.labelled_batches", "--work", str(work), "calibration"],
        cwd=ROOT, env=_env(state), stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    output = process.stdout.read()
    _pid, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("the calibration child failed")
    preload, view, job, after, again, shown = output.split()[-6:]
    seconds = time.perf_counter() - started
    total = usage.ru_utime + usage.ru_stime
    rows.append(("calibration report, a new process (start-up, libraries, first view, its job, next view, again)", seconds,
                 total, usage.ru_maxrss / 1024))  # fmt: skip
    print(f"  calibration report: libraries {float(preload):.2f} s CPU, first view {float(view):.2f} s CPU ({shown}), "
          f"its job {float(job):.2f} s CPU, "
          f"next view {float(after):.2f} s CPU, computed again {float(again):.2f} s CPU; the process "
          f"{total:.2f} s CPU, {usage.ru_maxrss / 1024:,.0f} MB", flush=True)  # fmt: skip
    parts = {
        "the heavy libraries imported before the fork (gunicorn's master, a Celery worker's main process)": preload,
        "first view: the page answers, the job started (the view's work)": view,
        "its job: the report finished and kept (in a worker that imported them)": job,
        "the next view: the kept report shown": after,
        "computed again in that process (libraries loaded)": again,
    }
    rows += [(f"calibration report, {part}", float("nan"), float(cpu), 0) for part, cpu in parts.items()]
    state = _fresh(built, work, "corrected")
    step("`sync_batch crowd`", state, ["sync_batch", "crowd"])
    runs = ",".join(f"run{i + 1}" for i in range(RUNS))
    step(f"`bias_report --from-batch crowd --runs <7> --cutoffs {CUTOFFS}`", state, [
        "bias_report", "--from-batch", "crowd", "--runs", runs, "--cutoffs", CUTOFFS])  # fmt: skip
    print(f"  done (load average {load_average()})\n")
    print("| step | seconds | CPU s | peak MB |\n| --- | ---: | ---: | ---: |")
    for label, seconds, cpu, peak in rows:
        wall = "" if seconds != seconds else f"{seconds:.1f}"
        print(f"| {label} | {wall} | {cpu:.2f} | {f'{peak:,.0f}' if peak else ''} |")


if __name__ == "__main__":
    main()
