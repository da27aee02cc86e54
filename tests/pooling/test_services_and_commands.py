"""Imports are idempotent and all-or-nothing; pools store their provenance."""

import gzip
import math
import os
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from pooling.models import Collection, Pool, PoolEntry, Query, QuerySet, Run


def run(*args, **kwargs) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO(), verbosity=0, **kwargs)
    return out.getvalue()


@pytest.mark.django_db
def test_imports_are_idempotent(world):
    assert "Already imported (unchanged)" in run("import_collection", str(world["collection"]), name="tiny")
    assert "Already imported (unchanged)" in run("import_queries", str(world["queries"]), name="q")
    assert "Already imported (unchanged)" in run("import_run", str(world["run_a"]), name="a", collection="tiny")
    assert Collection.objects.count() == 1
    assert Query.objects.filter(query_set__name="q").count() == 3
    assert Run.objects.count() == 2


@pytest.mark.django_db
def test_same_name_different_content_is_refused(world, tmp_path):
    other = tmp_path / "other.tsv"
    other.write_text("x\tsomething else\n")
    with pytest.raises(CommandError, match="already exists with different content"):
        run("import_collection", str(other), name="tiny")


@pytest.mark.django_db
def test_bad_query_file_leaves_nothing_behind(tmp_path):
    path = tmp_path / "q.tsv"
    path.write_text("1\tok\n2\tfine\n1\tduplicate\n")
    with pytest.raises(CommandError, match=r"q\.tsv:3: query id '1' repeats"):
        run("import_queries", str(path), name="broken")
    assert not QuerySet.objects.filter(name="broken").exists()
    assert not Query.objects.exists()


@pytest.mark.django_db
def test_run_with_unknown_docid_names_line_and_leaves_nothing(world, tmp_path):
    path = tmp_path / "bad.trec"
    path.write_text("1 Q0 d1 1 2 t\n1 Q0 d99 2 1 t\n")
    with pytest.raises(CommandError, match=r"bad\.trec:2: docid 'd99' is not in the collection"):
        run("import_run", str(path), name="bad", collection="tiny")
    assert not Run.objects.filter(name="bad").exists()
    out = StringIO()
    err = StringIO()
    call_command("import_run", str(path), name="bad", collection="tiny", skip_bad_lines=True, stdout=out, stderr=err)
    assert "skipped 1 bad line(s)" in err.getvalue()
    assert Run.objects.get(name="bad").rows == 1


@pytest.mark.django_db
def test_unknown_collection(world):
    with pytest.raises(CommandError, match="no collection named 'nope'"):
        run("import_run", str(world["run_a"]), name="c", collection="nope")


@pytest.mark.django_db
def test_pool_by_hand_with_provenance(world, tmp_path):
    # TF magnitudes, words tokenizer, RaB@2 (m - f per doc: d1 = -ln4, d2 = ln4, d3 = 0, d4 = 0):
    #   run a: q1 = (-ln4 + 0)/2, q2 = 0, q3 = (ln4 - ln4)/2 = 0
    #   run b: q1 = (0 - ln4)/2, q2 = ln4 (one document), q3 = 0
    out_file = tmp_path / "pool.tsv"
    out = run("pool", name="p", queries="q", runs="a,b", rank_cutoff=2, depth=1, out=str(out_file))
    pool = Pool.objects.get(name="p")
    half_ln4 = math.log(4) / 2
    entries = {(e.query.qid, e.run.name): e for e in PoolEntry.objects.filter(pool=pool).select_related("query", "run")}
    assert entries[("1", "a")].rank_bias == pytest.approx(-half_ln4)
    assert entries[("2", "b")].rank_bias == pytest.approx(math.log(4))
    # Lists (depth 1): a female -> q1; a male -> max(0, 0, 0) ties -> smallest qid among RaB 0 = q2;
    # b female -> q1; b male -> q2.
    assert entries[("1", "a")].female_position == 1
    assert entries[("2", "a")].male_position == 1
    assert entries[("2", "b")].male_position == 1
    assert sorted(pool.queries.queries.values_list("qid", flat=True)) == ["1", "2"]
    assert out_file.read_text() == "1\twho is she\n2\twhat is a synapse\n"
    assert "2 unique queries from 4 lists" in out


@pytest.mark.django_db
def test_pool_whitespace_tokenizer_differs(world):
    run("pool", name="pw", queries="q", runs="a", rank_cutoff=2, depth=5, tokenizer="whitespace", magnitude="bool")
    entry = PoolEntry.objects.get(pool__name="pw", query__qid="1", run__name="a")
    # "She and her sister" -> whitespace tokens she/and/her/sister: bool f = 1; RaB@2 = (-1 + 0) / 2.
    assert entry.rank_bias == pytest.approx(-0.5)


@pytest.mark.django_db
def test_pool_errors(world):
    with pytest.raises(CommandError, match="unknown run"):
        run("pool", name="x", queries="q", runs="a,zzz")
    with pytest.raises(CommandError, match="no query set named"):
        run("pool", name="x", queries="none", runs="a")
    run("pool", name="x", queries="q", runs="a", depth=1)
    with pytest.raises(CommandError, match="already exists"):
        run("pool", name="x", queries="q", runs="a", depth=1)


@pytest.mark.django_db
def test_counts_are_cached_between_pools(own_world, settings):
    import shutil
    from pathlib import Path

    shutil.rmtree(Path(settings.CACHE_DIR, "counts"))  # as if import_run had not counted ahead
    run("pool", name="p1", queries="q", runs="a,b", depth=1)
    caches = list(Path(settings.CACHE_DIR, "counts").glob("*.parquet"))
    assert len(caches) == 1
    Path(own_world["collection"]).write_text("corrupted")  # a second pool must not need the file again
    run("pool", name="p2", queries="q", runs="a,b", depth=2)
    assert Pool.objects.count() == 2


@pytest.mark.django_db
def test_run_cache_is_rebuilt_as_imported(world, tmp_path):
    from pathlib import Path

    from pooling.services import run_frame

    path = tmp_path / "skip.trec"
    path.write_text("1 Q0 d1 1 2 t\n1 Q0 d99 2 1 t\n1 Q0 d2 3 0.5 t\n")
    run("import_run", str(path), name="skip", collection="tiny", skip_bad_lines=True)
    imported = Run.objects.get(name="skip")
    before = run_frame(imported)
    Path(imported.data).unlink()
    assert run_frame(imported).equals(before)  # d99 is skipped again, not brought back
    Path(imported.data).unlink()
    path.write_text("1 Q0 d1 1 2 t\n")
    with pytest.raises(Exception, match="missing or changed since it was imported"):
        run_frame(imported)


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["p q", "a/b", "dev!", ""])
def test_names_must_be_usable_in_urls(world, name):
    with pytest.raises(CommandError, match="use letters, digits, hyphens and underscores"):
        run("pool", name=name, queries="q", runs="a", depth=1)
    with pytest.raises(CommandError, match="use letters, digits, hyphens and underscores"):
        run("import_queries", str(world["queries"]), name=name)
    assert not Pool.objects.exists()


@pytest.mark.django_db
def test_unwritable_out_fails_before_the_pool_is_built(world, tmp_path):
    with pytest.raises(CommandError, match=r"the folder .*missing does not exist"):
        run("pool", name="p", queries="q", runs="a", depth=1, out=str(tmp_path / "missing" / "pool.tsv"))
    assert not Pool.objects.exists() and not (tmp_path / "missing").exists()


@pytest.mark.django_db
def test_a_collection_changed_after_import_is_not_counted(own_world, settings):
    import shutil
    from pathlib import Path

    shutil.rmtree(Path(settings.CACHE_DIR, "counts"))  # the counts made ahead are gone: the pool must count
    Path(own_world["collection"]).write_text("d1\tsomething else entirely, and longer than before\n")
    with pytest.raises(CommandError, match="missing or changed since it was imported"):
        run("pool", name="p", queries="q", runs="a", depth=1)
    assert not Pool.objects.exists()


@pytest.mark.django_db
def test_import_run_counts_ahead_what_a_default_pool_reads(own_world, settings):
    """After ``import_run`` the counts cache holds, for the built-in word list and each tokenizer,
    the passages the runs rank in their top 10: the reference's whitespace counts (lower-case,
    ``split(" ")``), and for ``words`` what a pool counting them itself gets. A default pool then
    reads no passage: it succeeds on a collection file gone since, and equals the pool of a cold cache."""
    import shutil
    from collections import Counter
    from pathlib import Path

    import polars as pl

    from genderbias.text.tokenize import tokenizer_key
    from genderbias.text.wordlists import default_wordlist
    from pooling.services import document_counts_for
    from tests.pooling.conftest import PASSAGES, RUN_A, RUN_B

    words = default_wordlist()
    top = sorted({doc for run_ in (RUN_A, RUN_B) for docs in run_.values() for doc in docs[:10]})
    cache = Path(settings.CACHE_DIR, "counts")
    ahead = {
        tokenizer: pl.read_parquet(path).sort("docid")
        for tokenizer in ("whitespace", "words")
        for path in cache.glob(f"*-{tokenizer_key(tokenizer)}.parquet")
    }
    assert sorted(ahead) == ["whitespace", "words"] and len(list(cache.glob("*.parquet"))) == 2
    tokens = {doc: Counter(PASSAGES[doc].lower().split(" ")) for doc in top}
    reference = [
        (doc, sum(tokens[doc][w] for w in words.female), sum(tokens[doc][w] for w in words.male)) for doc in top
    ]
    assert ahead["whitespace"].select("docid", "f", "m").rows() == reference
    shutil.rmtree(cache)
    collection = Collection.objects.get(name="tiny")
    cold = document_counts_for(collection, top, words, "words", lengths=False, bar=False).sort("docid")
    assert ahead["words"].equals(cold)

    run("pool", name="cold", queries="q", runs="a,b", depth=2, tokenizer="whitespace")
    shutil.rmtree(cache)
    run(
        "import_run", str(own_world["run_a"]), str(own_world["run_b"]), collection="tiny"
    )  # already imported: counts again
    Path(own_world["collection"]).unlink()
    run("pool", name="ahead", queries="q", runs="a,b", depth=2, tokenizer="whitespace")

    def entries(name: str) -> list[tuple]:
        rows = PoolEntry.objects.filter(pool__name=name)
        return sorted(rows.values_list("query__qid", "run__name", "rank_bias", "female_position", "male_position"))

    assert entries("ahead") == entries("cold") and len(entries("cold")) > 0


def _cache_files(folder: str) -> list[str]:
    from core.services.storage import cache_dir

    return sorted(p.name for p in cache_dir(folder).iterdir())


@pytest.mark.django_db
def test_collection_name_clash_leaves_no_index_or_staging_file(world, tmp_path):
    before = _cache_files("collections")
    other = tmp_path / "other.tsv"
    other.write_text("x\tsomething else\n")
    with pytest.raises(CommandError, match="already exists with different content"):
        run("import_collection", str(other), name="tiny")
    assert _cache_files("collections") == before


@pytest.mark.django_db
@pytest.mark.parametrize("command", ["import_collection", "import_queries", "import_run"])
def test_truncated_gzip_fails_cleanly_in_every_importer(world, tmp_path, command):
    source = {"import_collection": "collection", "import_queries": "queries", "import_run": "run_a"}[command]
    whole = gzip.compress(world[source].read_bytes() * 200)
    path = tmp_path / "cut.gz"
    path.write_bytes(whole[: len(whole) - 12])
    before = (Collection.objects.count(), QuerySet.objects.count(), Run.objects.count(), _cache_files("collections"))
    extra = {"collection": "tiny"} if command == "import_run" else {}
    with pytest.raises(CommandError) as err:
        run(command, str(path), name="cut", **extra)
    assert str(err.value) == f"{path}: the gzip file is truncated (it ends before its last block)"
    after = (Collection.objects.count(), QuerySet.objects.count(), Run.objects.count(), _cache_files("collections"))
    assert after == before


@pytest.mark.django_db
def test_stale_staging_files_of_killed_imports_are_removed(world, tmp_path):
    import subprocess

    from core.services.storage import cache_dir, staging_path

    dead = subprocess.Popen(["true"])  # a process id that has certainly ended
    dead.wait()
    stale = cache_dir("staging") / f"{dead.pid}-collection-collection.tsv.parquet"
    stale.write_bytes(b"half an index")
    mine = staging_path("collection-next.parquet")
    assert not stale.exists()
    assert mine.parent == stale.parent and mine.name.startswith(f"{os.getpid()}-")


@pytest.mark.django_db
def test_several_runs_in_one_command_msmarco_format_and_interleaved_note(world, tmp_path):
    bm25 = tmp_path / "bm25.tsv"
    bm25.write_text("1\td3\t2\n1\td1\t1\n2\td2\t1\n")
    dense = tmp_path / "dense.trec.gz"
    dense.write_bytes(gzip.compress(b"1 Q0 d1 1 2 t\n2 Q0 d2 1 2 t\n1 Q0 d3 2 1 t\n"))
    out = run("import_run", str(bm25), str(dense), collection="tiny")
    assert "run 'bm25': 2 queries, 3 rows" in out
    assert "format: MS MARCO (qid docid rank; ordered by rank)" in out
    assert "run 'dense': 2 queries, 3 rows" in out
    assert "1 queries had their lines in several blocks" in out
    from pooling.services import run_frame

    assert run_frame(Run.objects.get(name="bm25"))["docid"].to_list() == ["d1", "d3", "d2"]
    assert run_frame(Run.objects.get(name="dense"))["docid"].to_list() == ["d1", "d3", "d2"]
    with pytest.raises(CommandError, match="--name names one run"):
        run("import_run", str(bm25), str(dense), name="x", collection="tiny")
    # Every bad line is listed, not only the first.
    with pytest.raises(CommandError, match=r"(?s)bm25\.tsv: 3 bad lines.*\n  line 1: expected 6 columns.*\n  line 3: "):
        run("import_run", str(bm25), name="forced", collection="tiny", run_format="trec")


@pytest.mark.django_db
def test_several_runs_at_an_error_keep_the_runs_before_it_and_nothing_after(world, tmp_path):
    """A bad second file leaves the first registered
    with its file, the third untouched, and the same command again imports only what is missing."""
    from pooling.services import run_frame

    good, bad, last = (tmp_path / f"{name}.trec" for name in ("good", "bad", "last"))
    good.write_text("1 Q0 d1 1 2 t\n2 Q0 d2 1 2 t\n")
    bad.write_text("1 Q0 d1 1 2 t\n1 Q0 nowhere 2 1 t\n")
    last.write_text("1 Q0 d3 1 2 t\n")
    with pytest.raises(CommandError, match=r"bad\.trec:2: docid 'nowhere' is not in the collection"):
        run("import_run", str(good), str(bad), str(last), collection="tiny")
    before = set(Run.objects.exclude(name="good").values_list("name", flat=True))  # the world's own runs
    assert Run.objects.filter(name__in=["good", "bad", "last"]).count() == 1
    assert run_frame(Run.objects.get(name="good"))["docid"].to_list() == ["d1", "d2"]
    bad.write_text("1 Q0 d1 1 2 t\n")
    out = run("import_run", str(good), str(bad), str(last), collection="tiny")
    assert "run 'bad': 1 queries" in out and "run 'last': 1 queries" in out
    assert set(Run.objects.values_list("name", flat=True)) == before | {"bad", "good", "last"}
    # One name twice in a command (two folders' files): the first registered, the second compared with it.
    for folder, docid in (("one", "d1"), ("two", "d3")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "twice.trec").write_text(f"1 Q0 {docid} 1 2 t\n")
    with pytest.raises(CommandError, match="a run named 'twice' already exists with different content"):
        run("import_run", str(tmp_path / "one" / "twice.trec"), str(tmp_path / "two" / "twice.trec"), collection="tiny")
    assert run_frame(Run.objects.get(name="twice"))["docid"].to_list() == ["d1"]


@pytest.mark.django_db
def test_first_pool_from_files_in_one_command_equals_pool_by_names(files, tmp_path):
    args = {"rank_cutoff": 2, "depth": 1}
    run(
        "pool",
        name="from-files",
        queries=str(files["queries"]),
        runs=f"{files['run_a']},{files['run_b']}",
        collection=str(files["collection"]),
        **args,
    )
    assert sorted(Run.objects.values_list("name", flat=True)) == ["a", "b"]
    assert Collection.objects.get().name == "collection"
    # Again by the names the files were registered under: nothing re-imported, same pool.
    run("pool", name="by-names", queries="queries", runs="a,b", **args)
    assert Run.objects.count() == 2 and QuerySet.objects.filter(origin=QuerySet.Origin.IMPORTED).count() == 1
    pooled = {
        name: sorted(Pool.objects.get(name=name).queries.queries.values_list("qid", flat=True))
        for name in ("from-files", "by-names")
    }
    assert pooled["from-files"] == pooled["by-names"] and pooled["by-names"]
    with pytest.raises(CommandError, match="give --collection"):
        run("pool", name="nope", queries="queries", runs=str(files["run_a"]))


@pytest.mark.django_db
def test_rows_inserted_in_bulk_come_back_as_given():
    """``insert_rows`` (``executemany`` on SQLite, ``COPY`` on PostgreSQL) keeps every character:
    tabs, newlines, backslashes, quotes, the copy format's own ``\\N`` and end marker ``\\.``, and non-ASCII."""
    from pooling.services import create_query_set

    texts = ["a\tb", "line\nbreak\r\n", "back\\slash", "\\N", "\\.", "'quoted' \"both\"", "ünïcödé ✓", "", " "]
    queries = [(f"q{i}", text) for i, text in enumerate(texts)]
    query_set = create_query_set("tricky", queries, origin=QuerySet.Origin.POOL)
    assert list(query_set.queries.order_by("position").values_list("qid", "text")) == queries


@pytest.mark.django_db
def test_counting_ahead_fills_each_cache_with_what_it_lacks(world, settings):
    """``count_ahead`` reads each passage once for every tokenizer, adds to each cache only the
    passages it lacks (a row with its length is kept, never replaced by one without), and gives
    the counts the reference's whitespace split gives, and for ``words`` what one call counts alone."""
    import shutil
    from collections import Counter
    from pathlib import Path

    import polars as pl

    from genderbias.text.tokenize import tokenizer_key
    from genderbias.text.wordlists import default_wordlist
    from pooling.services import document_counts_for
    from pooling.services.counts import count_ahead
    from tests.pooling.conftest import PASSAGES

    cache = Path(settings.CACHE_DIR, "counts")
    shutil.rmtree(cache)
    collection, words, docids = Collection.objects.get(name="tiny"), default_wordlist(), sorted(PASSAGES)
    document_counts_for(collection, ["d1", "d2"], words, "words", bar=False)  # with their lengths
    count_ahead(collection, docids, words, ["words", "whitespace"], bar=False)
    ahead = {
        tok: pl.read_parquet(next(cache.glob(f"*-{tokenizer_key(tok)}.parquet"))).sort("docid")
        for tok in ("words", "whitespace")
    }
    assert ahead["words"]["docid"].to_list() == docids == ahead["whitespace"]["docid"].to_list()
    assert ahead["words"].filter(pl.col("length").is_not_null())["docid"].to_list() == ["d1", "d2"]
    tokens = {doc: Counter(PASSAGES[doc].lower().split(" ")) for doc in docids}
    reference = [(d, sum(tokens[d][w] for w in words.female), sum(tokens[d][w] for w in words.male)) for d in docids]
    assert ahead["whitespace"].select("docid", "f", "m").rows() == reference
    shutil.rmtree(cache)
    alone = document_counts_for(collection, docids, words, "words", lengths=False, bar=False).sort("docid")
    assert ahead["words"].select("docid", "f", "m").equals(alone.select("docid", "f", "m"))
