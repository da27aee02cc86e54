"""What a publication promises: annotator ids unlinkable across datasets, nothing deleted it did not write, the
Hub's offline mode kept, clean refusals for bad folders and repository ids, wording true to the data (each test
failed before its fix, from the review of dataset publishing)."""

import json
import os
import stat

import pyarrow.parquet as pq
import pytest

from annotation.results.selectors.labels import query_results
from publishing import tables
from publishing.services import dataset as services
from publishing.services.dataset import publish_dataset
from tests.publishing.test_dataset_folder import _kept_annotated, annotated  # noqa: F401 (fixture)


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


def test_a_rerun_never_deletes_what_it_did_not_write(annotated, tmp_path, capsys):  # noqa: F811
    from django.core.management import call_command

    from core.errors import ServiceError

    # A git clone of the Hub repository, with the files of an earlier publication and the user's own.
    clone = tmp_path / "clone"
    publish_dataset(annotated, clone, "mit", with_judgments=True)
    assert json.loads((clone / ".publish_dataset.json").read_text())["files"]["README.md"]
    (clone / ".git").mkdir()
    (clone / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (clone / "NOTES.md").write_text("my notes")
    with pytest.raises(ServiceError, match=r"did not write: \.git/, NOTES\.md\..*--force"):
        publish_dataset(annotated, clone, "mit")
    assert (clone / ".git" / "HEAD").is_file() and (clone / "NOTES.md").read_text() == "my notes"

    # A hand edit of the card is named, not thrown away.
    edited = tmp_path / "edited"
    publish_dataset(annotated, edited, "mit")
    (edited / "README.md").write_text("my own card")
    with pytest.raises(ServiceError, match=r"edited since it wrote them: README\.md"):
        publish_dataset(annotated, edited, "mit")
    assert (edited / "README.md").read_text() == "my own card"
    # An old-style folder (croissant.json, no manifest) is not taken for ours either.
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / "croissant.json").write_text("{}")
    with pytest.raises(ServiceError, match=r"did not write: croissant\.json"):
        publish_dataset(annotated, legacy, "mit")

    # --force writes the dataset's files, removes its own unchanged ones no longer written (the
    # judgments) and keeps every other file.
    call_command("publish_dataset", annotated.name, "--out", str(clone), "--license", "mit", "--force")
    assert "Left in place (not written by publish_dataset): .git, NOTES.md" in capsys.readouterr().out
    assert (clone / ".git" / "HEAD").is_file() and (clone / "NOTES.md").read_text() == "my notes"
    assert not (clone / "judgments.parquet").exists()
    assert pq.read_table(clone / "queries.parquet").num_rows == 6
    # An unchanged folder of ours (or a subset of it) is replaced whole without --force.
    publish_dataset(annotated, edited, "mit", force=True)
    (edited / "non_gendered.parquet").unlink()
    publish_dataset(annotated, edited, "mit", with_judgments=True)
    assert (edited / "judgments.parquet").is_file() and (edited / "non_gendered.parquet").is_file()


def test_a_push_keeps_the_hubs_offline_hook_and_puts_the_client_factory_back(annotated, tmp_path, monkeypatch):  # noqa: F811
    from django.core.management import CommandError, call_command
    from huggingface_hub import constants
    from huggingface_hub.utils import _http

    def mine():  # a factory someone else in the process set
        return _http.default_client_factory()

    _http.set_client_factory(mine)
    try:
        monkeypatch.setenv("HF_TOKEN", "hf_not_a_real_token")
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # what HF_HUB_OFFLINE=1 sets at import
        with pytest.raises(CommandError, match="HF_HUB_OFFLINE is set, so nothing was uploaded") as refused:
            call_command(
                "publish_dataset", annotated.name, "--out", str(tmp_path / "d"), "--license", "mit", "--push", "me/gq"
            )
        assert "hf upload me/gq" in str(refused.value)
        assert _http._GLOBAL_CLIENT_FACTORY is mine  # put back, not replaced process-wide
    finally:
        _http.set_client_factory(_http.default_client_factory)


def test_replace_folder_rolls_back_and_never_collides(tmp_path):
    from genderbias.files.atomic import replace_folder

    target = tmp_path / "out"
    target.mkdir()
    (target / "a.txt").write_text("old")
    # A staging folder that cannot take the target's place: the previous folder comes back as it was.
    with pytest.raises(FileNotFoundError):
        replace_folder(tmp_path / "no-such-staging", target)
    assert (target / "a.txt").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no aside folder left behind
    # Leftovers of an earlier crash (any pid) do not collide with the aside folder.
    for pid in (os.getpid(), 1, 2):
        (tmp_path / f".out.old-{pid}").mkdir()
        (tmp_path / f".out.old-{pid}" / "x").write_text("x")
    staging = tmp_path / ".out.staging"
    staging.mkdir(mode=0o700)
    (staging / "a.txt").write_text("new")
    assert replace_folder(staging, target) == target
    assert (target / "a.txt").read_text() == "new" and stat.S_IMODE(target.stat().st_mode) == 0o755
    assert not staging.exists() and len(list(tmp_path.iterdir())) == 4  # out and the three leftovers
    # A symbolic link is refused, not replaced by a folder.
    link = tmp_path / "link"
    link.symlink_to(target)
    staging.mkdir()
    with pytest.raises(IsADirectoryError, match="symbolic link"):
        replace_folder(staging, link)
    assert link.is_symlink() and (target / "a.txt").read_text() == "new"


def test_a_leftover_or_a_symlinked_out_is_a_clean_refusal_or_no_matter(annotated, tmp_path):  # noqa: F811
    from core.errors import ServiceError

    out = tmp_path / "gq"
    publish_dataset(annotated, out, "mit")
    (tmp_path / f".gq.old-{os.getpid()}").mkdir()  # left by a crash of the old code
    (tmp_path / f".gq.old-{os.getpid()}" / "x").write_text("x")
    publish_dataset(annotated, out, "mit", with_judgments=True)  # replaced, no OSError
    assert (out / "judgments.parquet").is_file()
    link = tmp_path / "link"
    link.symlink_to(out)
    with pytest.raises(ServiceError, match=r"symbolic link.*pass the folder it points to"):
        publish_dataset(annotated, link, "mit")
    assert link.is_symlink() and (out / "judgments.parquet").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == [f".gq.old-{os.getpid()}", "gq", "link"]


def _facts(machine_accepted: int) -> dict:
    """A Prolific batch's facts with a machine routing in force that accepted ``machine_accepted`` labels."""
    return {
        "batch": {
            "name": "b",
            "provider": "prolific",
            "annotators": "participants recruited through Prolific",
            "source": "gq",
            "assignments_per_query": 3,
            "queries_per_hit": 10,
            "reward": "1.00",
            "qualifications": {},
            "min_votes": 2,
            "spent": "12.00",
        },
        "pool": None,
        "quality": {"gold_per_hit": 0, "training_queries": 0, "escalate_until": None},
        "prolific": None,
        "agreement": {
            "level": 0.95,
            "krippendorff_alpha": 0.8,
            "alpha_ci": [0.7, 0.9],
            "bootstrap_resamples": 1000,
            "percent_agreement": 0.9,
            "fleiss_kappa": 0.8,
            "judgments": 30,
            "workers": 5,
            "judgments_per_query": {"3": 10},
        },
        "labels": {
            "queries": 10 + machine_accepted,
            "labelled": 10 + machine_accepted,
            "counts": {"n": 4 + machine_accepted, "f": 3, "m": 3, "o": 0},
            "sources": {"crowd majority": 10, **({"machine-accepted": machine_accepted} if machine_accepted else {})},
            "labelled_by": {"crowd": 10, "in-house": 0, "adjudicator": 0, "machine": machine_accepted},
            "adjudicated": 0,
            "set_aside": {"disputed": 0, "too_few_votes": 0},
        },
        "non_gendered_share": {"estimate": 0.4, "ci": [0.17, 0.69], "method": "Wilson score"},
        "source_dataset": None,
        "machine": {
            "labeller": "chat",
            "model": "gpt-x",
            "prompt / rules version": "v1",
            "confidence threshold": 0.99,
            "guarantee": "no guarantee (point estimate)",
            "estimated accuracy of accepted labels": None,
            "its 95% CI": [None, None],
            "machine-accepted queries": machine_accepted,
        },
    }


def test_a_routing_that_accepted_nothing_gets_no_machine_wording():
    from publishing import hub_card, statements
    from publishing.croissant import rai_fields

    none = _facts(0)
    fields = rai_fields(none)
    assert "rai:machineAnnotationTools" not in fields
    assert not any("Machine-accepted" in item for item in fields["rai:dataBiases"])
    assert "none of its labels was accepted" in fields["rai:dataAnnotationProtocol"][0]
    card = hub_card.card(
        none, list(tables.configs_for(False)), dict.fromkeys(tables.CONFIGS, 10), license_id="mit",
        pretty_name="b", citation="@x{}", published="2026-01-01",
    )  # fmt: skip
    assert "## Machine labels" not in card and "machine-generated" not in card.split("---")[1]
    some = _facts(4)
    fields = rai_fields(some)
    assert "(4 queries" in fields["rai:machineAnnotationTools"][0]
    assert any("Machine-accepted" in item for item in fields["rai:dataBiases"])
    assert "none of its labels" not in fields["rai:dataAnnotationProtocol"][0]
    assert statements.machine_labels(some) == 4


@pytest.mark.parametrize("repo_id", ["me/bad name", "me/..", "me/-x", "me/a--b", "me/x.git", "me/" + "x" * 97])
def test_a_bad_repository_id_is_named_not_reported_as_a_hub_failure(annotated, tmp_path, repo_id):  # noqa: F811
    from core.errors import ServiceError

    if not (tmp_path / "d").exists():
        publish_dataset(annotated, tmp_path / "d", "mit")
    # A closed port: were the id not checked first, this would be a HubError (502, "try later").
    with pytest.raises(ServiceError, match=r"not a Hub repository id.*OWNER/NAME") as refused:
        services.push_folder(tmp_path / "d", repo_id, token="hf_x", endpoint="http://127.0.0.1:9", timeout=1)
    assert not isinstance(refused.value, services.HubError)


def test_the_exports_card_names_who_labelled_as_every_published_text_does(annotated, tmp_path):  # noqa: F811
    from annotation.exports.services import export_queries

    export = export_queries(annotated, "all", tmp_path / "all.csv", fmt="csv")
    card = (tmp_path / "all.csv.md").read_text()
    assert card == export.card
    assert f"Queries of batch {annotated.name!r} labelled by in-house annotators as Non-gendered" in card
    assert "crowd workers" not in card and "In-house annotators (this site))" not in card


def test_license_other_names_its_terms_in_the_hubs_yaml(annotated, tmp_path, client, researcher):  # noqa: F811
    import yaml
    from django.core.management import CommandError, call_command

    from core.errors import ServiceError

    with pytest.raises(CommandError, match="--license-name"):
        call_command("publish_dataset", annotated.name, "--out", str(tmp_path / "a"), "--license", "other")
    with pytest.raises(ServiceError, match="go with --license other only"):
        publish_dataset(annotated, tmp_path / "b", "mit", license_name="x", license_link="LICENSE")
    with pytest.raises(ServiceError, match="lowercase"):
        publish_dataset(annotated, tmp_path / "c", "other", license_name="My License", license_link="LICENSE")
    with pytest.raises(ServiceError, match="URL or a file name"):
        publish_dataset(annotated, tmp_path / "c", "other", license_name="x", license_link="../etc/passwd")
    assert not any((tmp_path / name).exists() for name in "abc")  # refused before writing

    call_command(
        "publish_dataset", annotated.name, "--out", str(tmp_path / "d"), "--license", "other",
        "--license-name", "study-terms-1.0", "--license-link", "https://example.org/terms",
    )  # fmt: skip
    readme = (tmp_path / "d" / "README.md").read_text()
    meta = yaml.safe_load(readme.split("---\n")[1])
    assert (meta["license"], meta["license_name"], meta["license_link"]) == (
        "other",
        "study-terms-1.0",
        "https://example.org/terms",
    )
    assert "`other`: `study-terms-1.0`, chosen by the researcher; its terms: https://example.org/terms." in readme
    assert json.loads((tmp_path / "d" / "croissant.json").read_text())["license"] == "https://example.org/terms"
    publish_dataset(annotated, tmp_path / "e", "other", license_name="study-terms", license_link="LICENSE")
    assert (
        "its terms: LICENSE (add this file to the folder before uploading)"
        in (tmp_path / "e" / "README.md").read_text()
    )

    client.force_login(researcher)  # the API takes them too
    body = {"license": "other", "license_name": "study-terms", "license_link": "LICENSE"}
    response = client.post(f"/api/annotation/batches/{annotated.name}/dataset/", body, content_type="application/json")
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    refused = client.post(
        f"/api/annotation/batches/{annotated.name}/dataset/", {"license": "other"}, content_type="application/json"
    )
    assert refused.status_code == 400 and "--license-name" in refused.json()["detail"]


def test_the_cards_machine_table_rounds_like_its_prose():
    from publishing import hub_card

    facts = _facts(4)
    facts["machine"] |= {"estimated accuracy of accepted labels": 0.9812345, "its 95% CI": [0.95012, 0.99456]}
    card = hub_card.card(
        facts, list(tables.configs_for(False)), dict.fromkeys(tables.CONFIGS, 10), license_id="mit",
        pretty_name="b", citation="@x{}", published="2026-01-01",
    )  # fmt: skip
    table = card.split("## Machine labels")[1].split("## Biases")[0]
    assert "| estimated accuracy of accepted labels | 0.981 |" in table
    assert "| its 95% CI | [0.950, 0.995] |" in table and "0.98123" not in table
    assert "| confidence threshold | 0.990 |" in table and "| machine-accepted queries | 4 |" in table
