"""The README's "Using it on real data" example: its block, its input files, what it makes.

The block is read from README.md itself (so an edit there is tested at once); every
``python manage.py ...`` line of it (and of every other README block) is run with its own words
by ``tests/test_readme_commands.py``, in a folder holding the small synthetic files written
here under the names the README gives them; :func:`check_real_data_outputs` is what it must make.
"""

import os
import shlex
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def real_data_commands() -> list[list[str]]:
    """The ``manage.py`` command lines of the README's first block under "Using it on real data"."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Using it on real data", 1)[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    commands = []
    for line in block.splitlines():
        words = shlex.split(line, comments=True)
        if words[:2] == ["python", "manage.py"]:
            commands.append(words[2:])
        else:
            assert not words or words[0] in ("source", "export"), f"README line not understood: {line!r}"
    return commands


def write_inputs(folder: Path) -> None:
    """Small files under the README's names: a collection, a query set and four runs (one MS MARCO)."""
    from pooling.synthetic import SyntheticSpec, write_collection, write_queries, write_runs

    spec = SyntheticSpec(passages=3000, queries=240, runs=4, depth=40)
    write_collection(folder / "collection.tsv", spec)
    write_queries(folder / "queries.dev.tsv", spec)
    runs = write_runs(folder, folder / "queries.dev.tsv", spec)
    for path, name in zip(runs, ("bm25.trec", "knrm.trec", "bert.trec", "big.trec"), strict=True):
        path.rename(folder / name)
    with open(folder / "bert.trec", encoding="utf-8") as trec, open(folder / "bert.tsv", "w") as msmarco:
        for line in trec:  # MS MARCO's run format: qid<TAB>docid<TAB>rank
            qid, _, docid, rank, *_ = line.split()
            msmarco.write(f"{qid}\t{docid}\t{rank}\n")
    (folder / "bert.trec").unlink()


def test_the_block_is_found_and_leads_with_in_house_annotators():
    commands = real_data_commands()
    names = [words[0] for words in commands]
    assert names[:3] == ["import_collection", "import_queries", "import_run"]
    assert {"create_batch", "publish_batch", "sync_batch", "export_queries", "bias_report", "plan_study"} <= set(names)
    created = next(words for words in commands if words[0] == "create_batch")
    assert created[created.index("--provider") + 1] != "mturk"  # Mechanical Turk closed on 30 September 2026


def check_real_data_outputs(folder: Path) -> None:
    """What the block makes, once its commands have run in ``folder`` (run with every other
    README command by ``tests/test_readme_commands.py``, in one world)."""
    from annotation.models import Batch, Judgment
    from metrics.models import Report
    from pooling.models import Pool

    assert Pool.objects.get(name="sigir20").runs.count() == 3
    batch = Batch.objects.get(name="sigir20")
    assert batch.provider == "local" and Judgment.objects.filter(assignment__hit__batch=batch).exists()
    non_gendered = (folder / "non-gendered.tsv").read_text().splitlines()
    assert non_gendered and all(len(line.split("\t")) == 2 for line in non_gendered)
    assert {"bias.csv", "bias.png", "sensitivity.csv", "bias-labels.csv", "pool.tsv"} <= set(os.listdir(folder))
    assert Report.objects.filter(name="sigir20-labels", label_batch=batch).exists()
