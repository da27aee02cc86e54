"""CRBO and variant-preference pages and API: measured as jobs, shown with tables and plots;
the per-query table pages and searches on the server."""

import pytest
from django.core.management import call_command

from core.models import Job
from tests.metrics.conftest import write_run

P = 0.9
# The CRBO of run a against run c over their queries 1, 2, 3 (worked in test_services_and_commands):
Q1 = (1 - P) / P * (1 / 2 * P**2) + 1 / 2 * P**2  # [d1,d3] vs [d4,d3]
Q2 = (1 - P) / P * (2 / 2 * P**2) + 2 / 2 * P**2  # [d3,d4] vs [d4,d3]
Q3 = 0.0  # [d2,d1] vs [d3,d4]
#: Versions of two documents; query 2 lacks y-n, so (2, y) is incomplete.
#: Run a's queries ranked otherwise on the counterfactual of collection tiny (same docids).
VARIANT_RUN_ON_TINY = {"1": ["d3", "d1"], "2": ["d3", "d4"], "3": ["d1", "d2"]}
VARIANT_RUN = {"1": ["x-f", "x-m", "x-n", "y-m", "y-f", "y-n"], "2": ["x-f", "x-n", "x-m", "y-f", "y-m"]}


@pytest.fixture
def staff(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True))
    return client


@pytest.fixture
def variants(world, tmp_path):
    docs = tmp_path / "variants.tsv"
    docs.write_text("".join(f"{d}-{v}\tpassage\n" for d in "xy" for v in "mfn"))
    call_command("import_collection", str(docs), name="variants", verbosity=0)
    run = write_run(tmp_path / "v.trec", VARIANT_RUN)
    call_command("import_run", str(run), name="v", collection="variants", verbosity=0)


def test_crbo_page_measures_as_a_job_and_shows_table_and_plot(staff, world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = staff.post("/metrics/crbo/", {"run": "a", "counterfactual_run": "c", "depth": 10, "p": P})
    job = Job.objects.get(kind="metrics.crbo")
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.pk}/"
    assert job.status == Job.Status.DONE, job.message
    assert job.result["crbo"] == pytest.approx((Q1 + Q2 + Q3) / 3) and job.result["queries"] == 3
    assert job.result["url"] == f"/metrics/crbo/{job.pk}/"

    page = staff.get(f"/metrics/crbo/{job.pk}/").content.decode()
    assert f"{(Q1 + Q2 + Q3) / 3:.4f}" in page and f"/metrics/crbo/{job.pk}/rbo.png" in page
    # Each query id with its text (issue 45), from the query set holding it.
    text = '<span class="query-text" title="what is a synapse">what is a synapse</span>'
    assert f'<td><code>2</code>{text}\n</td><td class="num">{Q2:.4f}</td>' in page
    searched = staff.get(f"/metrics/crbo/{job.pk}/?q=3").content.decode()
    assert "1 of 3 rows match" in searched and "<code>1</code>" not in searched and "who is he" in searched
    plot = staff.get(f"/metrics/crbo/{job.pk}/rbo.png")
    assert plot["Content-Type"] == "image/png" and plot.content.startswith(b"\x89PNG")
    csv = staff.get(f"/metrics/crbo/{job.pk}/per-query.csv").content.decode().splitlines()
    assert csv[0] == "qid,rbo" and len(csv) == 4
    assert f"/metrics/crbo/{job.pk}/" in staff.get("/metrics/crbo/").content.decode()


def test_crbo_form_refuses_the_same_run_twice_and_p_of_one(staff, world):
    response = staff.post("/metrics/crbo/", {"run": "a", "counterfactual_run": "a", "depth": 10, "p": 1})
    text = response.content.decode()
    assert response.status_code == 400 and "not the run itself" in text and "strictly between 0 and 1" in text
    assert not Job.objects.exists()


def test_preference_page_counts_wins_ties_and_incomplete(staff, variants, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        staff.post("/metrics/preference/", {"run": "v", "separator": "-", "versions": "m,f,n"})
    job = Job.objects.get(kind="genderbias.stats.preference")
    assert job.status == Job.Status.DONE, job.message
    result = job.result
    # (1,x): f; (1,y): m; (2,x): f; (2,y): lacks n.
    assert (result["cases"], result["decided"], result["ties"], result["incomplete"]) == (4, 3, 0, 1)
    assert result["wins"] == {
        "m": {"wins": 1, "fraction": pytest.approx(1 / 3)},
        "f": {"wins": 2, "fraction": pytest.approx(2 / 3)},
        "n": {"wins": 0, "fraction": 0.0},
    }
    page = staff.get(f"/metrics/preference/{job.pk}/").content.decode()
    assert '<td>f</td><td class="num">2</td><td class="num">0.667</td>' in page
    assert staff.get(f"/metrics/preference/{job.pk}/wins.png").content.startswith(b"\x89PNG")


def test_swap_measures_through_the_api(staff, variants, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        crbo = staff.post(
            "/api/metrics/crbo/", {"run": "a", "counterfactual_run": "c"}, content_type="application/json"
        )
        preference = staff.post("/api/metrics/preference/", {"run": "v"}, content_type="application/json")
    assert crbo.status_code == 202 and preference.status_code == 202
    assert staff.get(f"/api/jobs/{crbo.json()['id']}/").json()["result"]["crbo"] == pytest.approx((Q1 + Q2 + Q3) / 3)
    assert staff.get(f"/api/jobs/{preference.json()['id']}/").json()["result"]["decided"] == 3
    bad = staff.post("/api/metrics/crbo/", {"run": "a", "counterfactual_run": "zz"}, content_type="application/json")
    assert bad.status_code == 400 and list(bad.json()) == ["counterfactual_run"]
    # Run a has no versioned docids: refused with a 400 that says why, before any job starts.
    jobs = Job.objects.count()
    refused = staff.post("/api/metrics/preference/", {"run": "a"}, content_type="application/json")
    assert refused.status_code == 400 and "no docid of run 'a' ends in -<m|f|n>" in refused.json()["run"][0]
    assert Job.objects.count() == jobs


def test_preference_page_refuses_an_ordinary_run_with_the_form_error(staff, variants):
    """An ordinary run (docids without -m/-f/-n) gets the form back with the reason, not a 500."""
    response = staff.post("/metrics/preference/", {"run": "a", "separator": "-", "versions": "m,f,n"})
    assert response.status_code == 400
    assert "no docid of run &#x27;a&#x27; ends in -&lt;m|f|n&gt;" in response.content.decode()
    assert not Job.objects.filter(kind="genderbias.stats.preference").exists()
    # Another separator that no docid uses is refused the same way; the right one is accepted.
    assert staff.post("/metrics/preference/", {"run": "v", "separator": "_", "versions": "m,f,n"}).status_code == 400


def test_swap_pages_are_for_researchers(client, django_user_model, world):
    client.force_login(django_user_model.objects.create_user("ann", password="pw-secret-123"))
    for url in ("/metrics/crbo/", "/metrics/preference/"):
        assert client.get(url).status_code in (302, 403)
    assert client.post("/api/metrics/crbo/", {}, content_type="application/json").status_code == 403


def test_counterfactual_collection_is_written_and_registered_as_a_job(staff, world, django_capture_on_commit_callbacks):
    import gzip
    from pathlib import Path

    from pooling.models import Collection

    with django_capture_on_commit_callbacks(execute=True):
        response = staff.post("/metrics/crbo/counterfactual/", {"collection": "tiny", "name": "tiny-cf", "her": "his"})
    job = Job.objects.get(kind="genderbias.ranking.counterfactual")
    assert response.status_code == 302 and job.status == Job.Status.DONE, job.message
    swapped = Collection.objects.get(name="tiny-cf")
    assert job.result == {"collection": "tiny-cf", "passages": 4, "url": "/metrics/crbo/"}
    lines = gzip.decompress(Path(swapped.path).read_bytes()).decode().splitlines()
    assert lines[:2] == ["d1\tHe and his brother", "d2\tShe met her mother"]
    assert "tiny-cf" in staff.get("/metrics/crbo/").content.decode()

    again = staff.post("/metrics/crbo/counterfactual/", {"collection": "tiny", "name": "tiny-cf", "her": "his"})
    assert again.status_code == 400 and "a collection with this name exists" in again.content.decode()
    api = staff.post(
        "/api/metrics/counterfactual-collections/",
        {"collection": "tiny", "name": "tiny-cf"},
        content_type="application/json",
    )
    assert api.status_code == 400 and api.json() == {"name": ["a collection with this name exists"]}
    assert Job.objects.filter(kind="genderbias.ranking.counterfactual").count() == 1


def test_crbo_warns_when_the_counterfactual_run_is_not_one(
    staff, world, variants, tmp_path, django_capture_on_commit_callbacks
):
    """Same collection, another collection's docids, identical rankings: warned on the page, in the API, by the command."""
    import io

    from tests.metrics.conftest import RUN_A

    out = tmp_path / "cf.tsv.gz"
    call_command("counterfactual_collection", collection="tiny", out=str(out), verbosity=0, stdout=io.StringIO())
    call_command("import_collection", str(out), name="tiny-cf", verbosity=0)
    for name, collection, rankings in (("a-cf", "tiny-cf", VARIANT_RUN_ON_TINY), ("a-again", "tiny", RUN_A)):
        run = write_run(tmp_path / f"{name}.trec", rankings)
        call_command("import_run", str(run), name=name, collection=collection, verbosity=0)

    from metrics.services import crbo_summary
    from pooling.models import Run

    def warnings(second):
        return crbo_summary(Run.objects.get(name="a"), Run.objects.get(name=second))["warnings"]

    assert warnings("a-cf") == []  # the ranker's run on the swapped collection
    (same,) = warnings("c")
    assert "both runs rank the same collection (tiny)" in same
    same, identical = warnings("a-again")
    assert "rank every common query identically" in identical
    (other,) = warnings("v")
    assert "collection variants (of run v) is not a counterfactual of tiny" in other

    with django_capture_on_commit_callbacks(execute=True):
        api = staff.post("/api/metrics/crbo/", {"run": "a", "counterfactual_run": "c"}, content_type="application/json")
    job = Job.objects.get(pk=api.json()["id"])
    assert staff.get(f"/api/jobs/{job.pk}/").json()["result"]["warnings"] == [same]
    page = staff.get(f"/metrics/crbo/{job.pk}/").content.decode()
    assert 'id="crbo-warnings"' in page and "both runs rank the same collection (tiny)" in page
    stderr = io.StringIO()
    call_command("crbo", run="a", counterfactual_run="c", stdout=io.StringIO(), stderr=stderr)
    assert "Warning: both runs rank the same collection (tiny)" in stderr.getvalue()


def test_crbo_query_texts_come_from_the_query_set_the_runs_were_pooled_from(world, tmp_path):
    """A run names no query set: the text of a qid is the one of the query set the runs were pooled
    from, else the one every query set holding it agrees on; an id found nowhere, or with texts
    that differ (TREC ids repeat across collections), has none: the page shows the id alone."""
    from pooling.models import Pool, QuerySet, Run, WordList
    from pooling.selectors import run_query_texts

    other = tmp_path / "other.tsv"
    other.write_text("1\twho is she really\n")
    call_command("import_queries", str(other), name="other", verbosity=0)
    # Without a pool: the text the query sets agree on; two sets with different texts for "1": none.
    assert run_query_texts(["a", "c"], ["1", "2", "99"]) == {"2": "what is a synapse"}

    wordlist = WordList.objects.create(name="w", sha256="0" * 64, words={"she": "f"})
    pool = Pool.objects.create(
        name="p", source=QuerySet.objects.get(name="q"), queries=QuerySet.objects.get(name="other"),
        wordlist=wordlist, rank_cutoff=2, depth=5, magnitude="tf", tokenizer="simple",
    )  # fmt: skip
    pool.runs.add(Run.objects.get(name="a"))
    # Run a was pooled from query set q: its text wins over the newer set's.
    assert run_query_texts(["a", "c"], ["1"]) == {"1": "who is she"}
    assert run_query_texts(["b"], ["1"]) == {}  # b was never pooled: "1" is ambiguous
    assert run_query_texts(["a"], []) == {}
