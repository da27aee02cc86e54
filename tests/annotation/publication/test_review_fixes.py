"""Fixes from the review of dataset publishing: each test failed before its fix."""

import pyarrow.parquet as pq
import pytest

from annotation.publication import services, tables
from annotation.publication.services import publish_dataset
from annotation.results.selectors import query_results
from tests.annotation.publication.test_dataset_folder import annotated  # noqa: F401 (fixture)


def _results(workers: int) -> list[dict]:
    """Per-query results with ``workers`` annotators who all voted on one query."""
    votes = [{"worker": f"w-{i:02d}", "label": "n"} for i in range(workers)]
    return [{"qid": "1", "votes": votes}]


def test_dataset_ids_are_a_salted_permutation_not_the_platforms_order():
    results = _results(6)
    mappings = [tables.pseudonyms(results, salt=bytes([i]) * 32) for i in range(1, 21)]
    by_platform_order = {f"w-{i:02d}": f"annotator-{i + 1:03d}" for i in range(6)}
    for mapping in mappings:  # every mapping is a bijection onto annotator-001..006
        assert sorted(mapping.values()) == sorted(by_platform_order.values())
    # 20 fixed salts over 6! = 720 orders: the mapping is not the platform's order each time
    # (before the fix it always was) and the salts give several different mappings.
    assert sum(m == by_platform_order for m in mappings) < 20
    assert len({tuple(sorted(m.items())) for m in mappings}) > 10
    assert tables.pseudonyms(results, salt=b"s" * 32) == tables.pseudonyms(results, salt=b"s" * 32)
    with pytest.raises(ValueError, match="salt"):
        tables.pseudonyms(results, salt=b"")


def test_each_publication_draws_a_fresh_salt_and_numbers_by_it(annotated, tmp_path, monkeypatch):  # noqa: F811
    import secrets

    drawn, real = [], secrets.token_bytes

    def token_bytes(n):
        drawn.append(real(n))  # the real randomness, recorded
        return drawn[-1]

    monkeypatch.setattr(services.secrets, "token_bytes", token_bytes)
    results = query_results(annotated)
    published = []
    for name in ("one", "two"):
        publish_dataset(annotated, tmp_path / name, "mit", with_judgments=True)
        rows = pq.read_table(tmp_path / name / "judgments.parquet").to_pylist()
        published.append({(r["qid"], r["label"], r["annotator"]) for r in rows})
    assert len(drawn) == 2 and drawn[0] != drawn[1] and all(len(salt) >= 32 for salt in drawn)
    for salt, rows in zip(drawn, published, strict=True):
        assert rows == {(r["qid"], r["label"], r["annotator"]) for r in tables.judgment_rows(results, salt)}
