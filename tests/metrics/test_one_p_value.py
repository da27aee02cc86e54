"""One significance policy (issue 26.8): a comparison has ONE p-value wherever it is shown.

RaB[tf]@10 (and MRR@10) of one run against the baseline is read from every place that shows it:
the report page's Results table, the page's sigir2020 table, ``bias_report``'s terminal table and
its ``--table sigir2020``, the report API, the table API, the per-query CSV (page download and
``--per-query`` file). Before, the Results table's p was Bonferroni-corrected across the whole
report and the table's across the table: two p-values for one comparison, neither stated.
"""

import csv
import io
import re

import numpy as np
import pytest
from django.core.management import call_command

pytestmark = pytest.mark.slow  # a report of three runs built per test: about 3 s each

WORDS = ["she", "her", "woman", "he", "his", "man", "the", "river", "stone", "light"]


@pytest.fixture
def study(db, tmp_path):
    """12 queries, 40 passages of random gendered and neutral words, three runs, graded qrels."""
    rng = np.random.default_rng(8)
    docs = [f"p{i:02d}" for i in range(40)]
    passages = {d: " ".join(rng.choice(WORDS, size=int(rng.integers(4, 12)))) for d in docs}
    qids = [str(i) for i in range(1, 13)]
    (tmp_path / "collection.tsv").write_text("".join(f"{d}\t{t}\n" for d, t in passages.items()))
    (tmp_path / "queries.tsv").write_text("".join(f"{q}\tquery {q}\n" for q in qids))
    call_command("import_collection", str(tmp_path / "collection.tsv"), name="coll", verbosity=0)
    call_command("import_queries", str(tmp_path / "queries.tsv"), name="qs", verbosity=0)
    for name in ("base", "x", "y"):
        lines = []
        for qid in qids:
            for rank, doc in enumerate(rng.choice(docs, size=10, replace=False), start=1):
                lines.append(f"{qid} Q0 {doc} {rank} {20 - rank} {name}\n")
        (tmp_path / f"{name}.trec").write_text("".join(lines))
        call_command("import_run", str(tmp_path / f"{name}.trec"), name=name, collection="coll", verbosity=0)
    judgments = [f"{q} 0 {d} {int(rng.integers(0, 3))}\n" for q in qids for d in rng.choice(docs, 10, replace=False)]
    (tmp_path / "qrels.txt").write_text("".join(judgments))
    call_command("import_qrels", str(tmp_path / "qrels.txt"), name="rel", queries="qs", collection="coll", verbosity=0)
    stdout = io.StringIO()
    call_command(
        "bias_report",
        queries="qs",
        runs="base,x,y",
        cutoffs="5,10",
        qrels="rel",
        measures="RR@10,R@10",
        baseline="base",
        bootstrap=20,
        name="one-p",
        table="sigir2020",
        per_query=str(tmp_path / "pq.csv"),
        verbosity=0,
        stdout=stdout,
    )
    return stdout.getvalue(), tmp_path / "pq.csv"


def p_in(text: str) -> str:
    found = re.search(r"p (\d\.\d{4})", text)
    return found[1] if found else ""


def html_rows(html: str, start: str) -> list[list[str]]:
    """The rows (cell texts, tags stripped) of the first table after ``start``."""
    part = html[html.index(start) :]
    part = part[: part.index("</table>")]
    rows = []
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", part, flags=re.S):
        cells = re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, flags=re.S)
        rows.append([re.sub(r"<[^>]+>", " ", cell).strip() for cell in cells])
    return rows


def page_results_p(html: str, group: str, run: str, cutoff: int) -> str:
    rows = html_rows(html, '<table id="results"')
    header = rows[0]
    column = header.index(f"@{cutoff}")
    inside = False
    for row in rows[1:]:
        if len(row) == 1:
            inside = re.sub(r"\s+", " ", row[0]) == group
        elif inside and row[0].split()[0] == run:
            return p_in(row[column])
    raise AssertionError(f"{group} {run} not on the page")


def page_table_p(html: str, label: str, run: str) -> str:
    rows = html_rows(html, 'id="paper-table"')
    column = rows[0].index(label)
    return next(p_in(row[column]) for row in rows[1:] if row[0] == run)


def text_p(text: str, header_start: str, label: str, run: str) -> str:
    """A p under ``run`` in a fixed-width text table whose header line starts with ``header_start``."""
    lines = text.splitlines()
    # A wide table goes on in blocks of columns: the block whose header holds the label.
    top = next(i for i, line in enumerate(lines) if line.startswith(header_start) and f" {label}" in line)
    header = lines[top]
    end = header.index(f" {label}") + len(label) + 1
    row = next(i for i in range(top, len(lines)) if lines[i].split() and lines[i].split()[0] == run)
    below = lines[row + 1]
    assert below.startswith(" "), "a p line follows the run's row"
    return p_in(below[end - 12 : end + 1])


def csv_p(text: str, run: str, metric: str, variant: str, cutoff: int) -> tuple[str, set[str]]:
    rows = [
        r
        for r in csv.DictReader(io.StringIO(text))
        if (r["run"], r["metric"], r["variant"], r["cutoff"]) == (run, metric, variant, str(cutoff))
    ]
    assert len({r["p_value"] for r in rows}) == 1
    return rows[0]["p_value"], {r["significance"] for r in rows}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("metric", "variant", "group", "label"),
    [("RaB", "tf", "RaB [tf]", "RaB[tf]@10"), ("RR", "rel", "RR [rel]", "MRR@10")],
)
def test_one_comparison_has_one_p_value_everywhere(
    study, client, django_user_model, metric, variant, group, label, per_query_csv
):
    command, per_query_file = study
    client.force_login(django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True))
    report = client.get("/api/metrics/reports/one-p/").json()
    api = next(
        r["p_value"]
        for r in report["results"]
        if (r["run"], r["metric"], r["variant"], r["cutoff"]) == ("x", metric, variant, 10)
    )
    assert api is not None and 0 < api < 1
    table = client.get("/api/metrics/reports/one-p/table/?layout=sigir2020").json()
    column = [c["label"] for c in table["columns"]].index(label)
    table_api = next(row["cells"][column]["p_value"] for row in table["rows"] if row["run"] == "x")
    page = client.get("/metrics/one-p/?layout=sigir2020").content.decode()
    page_csv, page_policy = csv_p(per_query_csv(client, "one-p"), "x", metric, variant, 10)
    file_csv, file_policy = csv_p(per_query_file.read_text(), "x", metric, variant, 10)

    shown = {
        "report API": f"{api:.4f}",
        "table API": f"{table_api:.4f}",
        "page: Results": page_results_p(page, group, "x", 10),
        "page: sigir2020 table": page_table_p(page, label, "x"),
        "bias_report: results": text_p(command, group, "@10", "x"),
        "bias_report --table": text_p(command, "run ", label, "x"),
        "per-query CSV (page)": f"{float(page_csv):.4f}",
        "per-query CSV (--per-query)": f"{float(file_csv):.4f}",
    }
    assert set(shown.values()) == {f"{api:.4f}"}, shown
    assert table_api == api == float(page_csv) == float(file_csv)  # to the last bit where full precision is given

    # Every place states the test, the family and the correction.
    policy = report["significance"]
    assert (policy["correction"], policy["baseline"]) == ("Holm", "base") and "paired t-test" in policy["test"]
    assert policy["family"] == "every run against the baseline for one metric, variant and cutoff"
    assert table["significance"] == policy
    for where in (page, " ".join(command.split())):  # the command wraps its prose (metrics.formatting.wrap)
        assert where.count(policy["family"]) >= 2, "both tables state the family"
        assert "Holm" in where and "paired t-test" in where
    assert page_policy == file_policy and len(page_policy) == 1 and policy["family"] in page_policy.pop()


@pytest.mark.django_db
def test_the_tables_baseline_selector(study, client, django_user_model):
    client.force_login(django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True))
    page = client.get("/metrics/one-p/?layout=sigir2020").content.decode()
    # Its default is the report's baseline, submitted by name (an empty value lost the marks).
    assert '<option value="base" selected>base (the report\'s)</option>' in page
    assert '<option value="">' not in page[page.index('id="id_baseline"') :][:400]
    # The value the old form submitted (empty) still means the report's baseline.
    old = client.get("/metrics/one-p/?layout=sigir2020&baseline=").content.decode()
    assert "* p &lt; 0.05 against base." in old and page_table_p(old, "RaB[tf]@10", "x") != ""
    # Another baseline works: the table tests against it, the Results keep the report's.
    other = client.get("/metrics/one-p/?layout=sigir2020&baseline=y").content.decode()
    assert '<option value="y" selected>y</option>' in other and "against y." in other
    assert page_table_p(other, "RaB[tf]@10", "y") == "" and page_table_p(other, "RaB[tf]@10", "base") != ""
    unknown = client.get("/metrics/one-p/?layout=sigir2020&baseline=zz").content.decode()
    assert "baseline &#x27;zz&#x27; is not a run of the report" in unknown
