import io, shutil
import pytest
from django.core.management import call_command
from metrics import selectors
from metrics.models import Report
from metrics.services.paper import write_paper_bundle
from .test_paper_templates import NAME, QRELS, REFERENCE, RUNS, _seven_runs

@pytest.mark.django_db
def test_measure(batch, world, tmp_path, monkeypatch):
    (world / "qrels.txt").write_text(QRELS)
    call_command("import_qrels", str(world / "qrels.txt"), name="judged", queries="q", collection="tiny", verbosity=0)
    call_command("bias_report", from_batch=batch.name, runs="a,b,c", cutoffs="1,2,3", bootstrap=20, baseline="a",
        name=NAME, verbosity=0, stdout=io.StringIO())
    for t in ("article", "acm", "lncs"):
        shutil.rmtree(f"/tmp/lt/m-demo-{t}", ignore_errors=True)
        write_paper_bundle(Report.objects.get(name=NAME), f"/tmp/lt/m-demo-{t}", template=t)
    qids = [line.split(",", 1)[0] for line in REFERENCE.read_text().splitlines() if line.strip()]
    call_command("bias_report", from_batch=batch.name, runs="a,b,c", cutoffs="5,10,20", bootstrap=20, baseline="a",
        name="seven", verbosity=0, stdout=io.StringIO())
    report = Report.objects.get(name="seven")
    summary, per_query = _seven_runs(report, qids)
    monkeypatch.setattr(selectors, "report_summary", lambda _r: summary)
    monkeypatch.setattr(selectors, "report_per_query", lambda _r: per_query)
    report.run_order = list(RUNS)
    for t in ("article", "acm", "lncs"):
        shutil.rmtree(f"/tmp/lt/m-seven-{t}", ignore_errors=True)
        write_paper_bundle(report, f"/tmp/lt/m-seven-{t}", template=t)
