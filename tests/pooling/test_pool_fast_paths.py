"""The pool's fast paths give exactly what the paths they replace give.

The command's summary read from the
selected entries only (``pool_summary``) against ``summarise_pool`` of the whole table; the
cycle collector paused around a pool and given back as it was.
"""

import gc
import random

import polars as pl
import pytest
from django.core.management import call_command

from genderbias.text.tokenize import tokenizer_key
from pooling import selectors
from pooling.models import Pool
from pooling.services.common import collector_paused


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_the_commands_summary_equals_the_pages_summary(world, depth):
    call_command("pool", name="p", queries="q", runs="a,b", depth=depth, rank_cutoff=2, verbosity=0)
    pool = Pool.objects.get(name="p")
    summary = selectors.pool_summary(pool)
    assert summary == selectors.summarise_pool(*selectors.pool_table(pool))
    assert summary["size"] == pool.queries.queries.count() > 0


def test_the_collector_is_paused_then_given_back_as_it_was():
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        assert not gc.isenabled()
        raise RuntimeError("a failed pool")
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # paused by someone else: left paused
    finally:
        gc.enable()


@pytest.mark.parametrize("tokenizer", ["words", "whitespace"])
def test_a_pool_leaves_lengths_uncounted_and_a_report_counts_them_as_a_cold_cache_would(world, settings, tokenizer):
    """``pool`` counts only what RaB uses (``f``, ``m``); a later ``lengths=True`` call (a
    report) counts those passages again and gets, and caches, what it would have got alone."""
    import shutil
    from pathlib import Path

    from genderbias.text.wordlists import default_wordlist
    from pooling.models import Collection
    from pooling.services import document_counts_for
    from tests.pooling.conftest import PASSAGES

    call_command("pool", name="p", queries="q", runs="a,b", tokenizer=tokenizer, verbosity=0)
    collection, words, docids = Collection.objects.get(name="tiny"), default_wordlist(), sorted(PASSAGES)
    cache = Path(settings.CACHE_DIR, "counts")
    [cached] = [pl.read_parquet(path) for path in cache.glob(f"*-{tokenizer_key(tokenizer)}.parquet")]
    assert len(cached) and cached["length"].null_count() == len(cached)  # the pool counted no lengths
    pooled = document_counts_for(collection, docids, words, tokenizer, lengths=False, bar=False).sort("docid")
    after_pool = document_counts_for(collection, docids, words, tokenizer, bar=False).sort("docid")
    assert after_pool["length"].null_count() == 0
    assert after_pool.select("docid", "f", "m").equals(pooled.select("docid", "f", "m"))
    [cached] = [pl.read_parquet(path) for path in cache.glob(f"*-{tokenizer_key(tokenizer)}.parquet")]
    assert sorted(cached["docid"]) == docids and cached["length"].null_count() == 0  # one row each, complete
    shutil.rmtree(cache)
    cold = document_counts_for(collection, docids, words, tokenizer, bar=False).sort("docid")
    assert after_pool.equals(cold)


def test_texts_read_a_window_at_a_time_including_empty_ones(tmp_path):
    """Windows of the mapping begin at any passage, empty ones included (an empty window
    cannot be mapped), and every text comes back whole, in file order."""
    from genderbias.files.collection import read_passage_texts, scan_collection

    rng = random.Random(5)
    texts = ["", *("" if rng.random() < 0.2 else " ".join(["wörd"] * rng.randint(1, 50)) for _ in range(400))]
    path = tmp_path / "c.tsv"
    path.write_text("".join(f"d{i}\t{text}\n" for i, text in enumerate(texts)), encoding="utf-8")
    scan_collection(path, index_path=tmp_path / "index.parquet")
    index = pl.read_parquet(tmp_path / "index.parquet")
    for block_size in (1, 100, 5000, None):
        read = read_passage_texts(path, index.sample(fraction=1.0, shuffle=True, seed=1), block_size=block_size)
        assert read["docid"].to_list() == [f"d{i}" for i in range(len(texts))]
        assert read["text"].to_list() == texts


def test_an_empty_text_on_a_page_boundary_is_read(tmp_path):
    import mmap

    from genderbias.files.collection import read_passage_texts, scan_collection

    granularity = mmap.ALLOCATIONGRANULARITY
    first = "x" * (granularity - len("d0\t\nd1\t"))  # d1's (empty) text starts on the boundary
    path = tmp_path / "c.tsv"
    path.write_text(f"d0\t{first}\nd1\t\nd2\tshe\n", encoding="utf-8")
    scan_collection(path, index_path=tmp_path / "index.parquet")
    index = pl.read_parquet(tmp_path / "index.parquet")
    assert index.filter(pl.col("docid") == "d1")["start"].item() == granularity
    read = read_passage_texts(path, index.filter(pl.col("docid") != "d0"), block_size=1)
    assert read.rows() == [("d1", ""), ("d2", "she")]


@pytest.mark.parametrize("tokenizer", ["words", "whitespace"])
def test_the_reference_word_list_as_a_file_reuses_what_import_run_counted(
    world, reference_dir, monkeypatch, tmp_path, tokenizer
):
    """The counts cache is keyed by what it holds (the words, the tokenizer, the collection's
    checksum), not by the word list's name: after ``import_run`` counted ahead with the built-in list,
    a pool given the same 64 words as the reference file reads no passage and counts nothing again,
    and pools the same queries as the built-in list; the same file less one word is counted (the
    spy sees a count when there is one)."""
    from genderbias.text import magnitudes

    calls = []
    for reader in ("count_frame", "parse_passages", "read_passage_texts"):
        original = getattr(magnitudes, reader)

        def spy(*args, _original=original, _reader=reader, **kwargs):
            calls.append(_reader)
            return _original(*args, **kwargs)

        monkeypatch.setattr(magnitudes, reader, spy)
    wordlist = reference_dir / "wordlist_genderspecific.txt"
    options = {"queries": "q", "runs": "a,b", "rank_cutoff": 2, "depth": 1, "tokenizer": tokenizer, "verbosity": 0}
    call_command("pool", name="from-file", wordlist=str(wordlist), **options)
    assert calls == []
    call_command("pool", name="built-in", **options)
    assert calls == []
    pooled = {name: selectors.pool_table(Pool.objects.get(name=name))[1] for name in ("from-file", "built-in")}
    assert pooled["from-file"] == pooled["built-in"] and pooled["built-in"]
    assert Pool.objects.get(name="from-file").wordlist == Pool.objects.get(name="built-in").wordlist
    fewer = tmp_path / "fewer.txt"
    fewer.write_text("".join(line + "\n" for line in wordlist.read_text().splitlines() if line != "she,f"))
    call_command("pool", name="fewer-words", wordlist=str(fewer), **options)
    assert "count_frame" in calls
