"""A batch labelled by a machine first, published: the machine's labels are in the folder with their
confidence and source, the card says machine-generated and states the routing's guarantee (here: none,
the point estimate), and Croissant names the machine annotation tool with its calibration."""

import json

import pytest

from annotation import services
from annotation.machine.services.calibration import create_calibration_sample
from annotation.machine.services.routing import route_batch
from annotation.results.selectors.labels import MACHINE, query_results
from platforms.inhouse.services.simulation import simulate_local_annotations
from publishing.services.dataset import publish_dataset
from publishing.tables import CLASS_NAMES
from tests.annotation.machine.test_calibration_flow import answer_sample_until_in, machine_batch  # noqa: F401


@pytest.mark.slow
def test_machine_labels_are_published_with_their_source_confidence_and_guarantee(machine_batch, tmp_path):  # noqa: F811
    import pyarrow.parquet as pq
    import yaml

    sample = create_calibration_sample(machine_batch, 60, seed=1)
    services.publish_batch(sample)
    simulate_local_annotations(sample, annotators=4, accuracy=0.95, seed=2)
    answer_sample_until_in(machine_batch)  # routing waits for the sample's escalations (issue 58)
    routing = route_batch(machine_batch, 0.9, risk=None)
    assert routing.accepted  # some machine labels accepted, the rest routed (unanswered: too few votes)

    out = tmp_path / "mach"
    publish_dataset(machine_batch, out, "cc-by-4.0")
    results = {r["qid"]: r for r in query_results(machine_batch)}
    rows = {row["qid"]: row for row in pq.read_table(out / "queries.parquet").to_pylist()}
    machine_rows = {qid for qid, row in rows.items() if row["label_source"] == MACHINE}
    assert machine_rows == set(routing.accepted) and len(rows) == len(results)
    for qid in machine_rows:
        assert rows[qid]["label"] == CLASS_NAMES.index(results[qid]["label"])
        assert rows[qid]["machine_confidence"] == results[qid]["machine_confidence"] >= routing.threshold
        assert rows[qid]["ds_posterior"] is None  # no crowd vote on it
    assert all(rows[q]["machine_confidence"] is None for q in rows if q not in machine_rows)

    readme = (out / "README.md").read_text()
    meta = yaml.safe_load(readme.split("---\n")[1])
    assert meta["annotations_creators"] == ["expert-generated", "machine-generated"]  # in-house annotators
    assert "## Machine labels" in readme and "no guarantee (point estimate" in readme
    doc = json.loads((out / "croissant.json").read_text())
    tools = doc["rai:machineAnnotationTools"][0]
    assert "noisy, model test-noise, prompt/rules v1" in tools and f"({len(routing.accepted)} queries" in tools
    assert "Calibration on a blind crowd-labelled sample" in tools and "no guarantee" in tools
    assert "Machine-accepted labels were not seen by the crowd" in " ".join(doc["rai:dataBiases"])
