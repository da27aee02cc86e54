"""Auditing the routing's guarantee against a labelled file (``manage.py route_audit``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from annotation.crowd.services.batches import read_labelled
from annotation.machine.report.selectors import fitted_crowd
from annotation.machine.routing_text import _some
from annotation.machine.selectors import calibration_batch, identity_for, machine_labels, read_sample, reference_rule
from annotation.machine.services.calibration import DEFAULT_SAMPLE, reference_record
from annotation.machine.services.routing.plan import (
    DEFAULT_RISK,
    check_risk,
    check_target_accuracy,
    parse_cascade,
)
from annotation.models import Batch
from core.errors import FieldError, StateError
from genderbias.errors import InputError
from genderbias.files.textfiles import open_text
from genderbias.labels import LABELS


def audit_routing(
    batch: Batch,
    labels_file: str,
    target_accuracy: float,
    *,
    risk: float = DEFAULT_RISK,
    sample: int = DEFAULT_SAMPLE,
    redraws: int = 1000,
    labeller: str | None = None,
    progress=None,
    crowd: str | None = None,
    escalation_cap: int | None = None,
    until: str = "majority",
    extendable: bool = False,
    cascade: list[str] | None = None,
) -> dict[str, Any]:
    """Forecast routing on ``batch``'s own machine labels before paying a crowd: redraw the blind sample
    ``redraws`` times as ``calibrate --seed r`` would, certify on each and compare with ``labels_file``'s
    labels, read as the true ones (it must label every routable query). Reads only.

    ``crowd``: ``"none"`` (the file's labels are the crowd's), ``"fitted"`` (the model fitted to the batch's
    sample; the default when it has votes) or a crowd model in JSON (``crowd_from_dict``), simulated on each
    redraw (:func:`genderbias.machine.routing_forecast.simulate_path`). ``cascade``: as ``route --cascade``.
    Shares are of the batch's queries, gold left out."""

    import numpy as np

    from genderbias.machine.calibration_sample import random_sample
    from genderbias.machine.routing_audit import audit
    from genderbias.machine.routing_forecast import simulate_path

    check_target_accuracy(target_accuracy)
    check_risk(risk)
    if sample < 1:
        raise FieldError("sample", f"the sample needs at least one query, got {sample}")
    if redraws < 1:
        raise FieldError("redraws", f"at least one redraw is needed, got {redraws}")
    stages = parse_cascade(cascade) if cascade else []
    identity = identity_for(batch, stages[0][0] if stages else labeller)
    population = {q: m for q, m in machine_labels(batch, identity).items() if not m.in_training}
    truth = {q.qid: q.label for q in read_labelled(labels_file)}  # a file or queries:NAME
    missing = sorted(set(population) - set(truth))
    if missing:
        raise InputError(
            labels_file,
            None,
            f"no label for {len(missing)} of the {len(population)} machine-labelled queries of batch "
            f"{batch.name!r} (e.g. {_some(missing)})",
        )
    qids = sorted(population)
    index = {q: i for i, q in enumerate(qids)}
    samples = [[index[q] for q in random_sample(qids, sample, seed=r)] for r in range(redraws)]
    batch_size = batch.queries.filter(is_gold=False).count()
    model, crowd_used, rule = _audit_crowd(batch, crowd, escalation_cap, until)
    base = identity.as_dict() | {
        "batch": batch.name,
        "labels": str(labels_file),
        "sample": min(sample, len(qids)),
        "population": len(qids),
        "true_accuracy": sum(population[q].label == truth[q] for q in qids) / len(qids),
        "crowd": crowd_used,
        "reference": rule.describe(),
        "extendable": extendable,
        "cascade": [name for name, _ in stages],
    }
    common = {"target": target_accuracy, "risk": risk, "progress": progress}
    if model is None and not stages:
        confidence = [population[q].confidence for q in qids]
        correct = [population[q].label == truth[q] for q in qids]
        result = audit(
            confidence, correct, samples, batch_size=batch_size, planned=sample, extendable=extendable, **common
        )
        return base | result.as_dict()
    names = [name for name, _ in stages] or [identity.labeller]
    labels = np.full((len(names), len(qids)), -1)
    confidence = np.full((len(names), len(qids)), np.nan)
    for i, name in enumerate(names):
        mine = machine_labels(batch, identity if i == 0 else identity_for(batch, name))
        for q, m in mine.items():
            if q in index and not m.in_training:
                labels[i, index[q]] = LABELS.index(m.label)
                confidence[i, index[q]] = m.confidence
    forecast = simulate_path(
        np.array([LABELS.index(truth[q]) for q in qids]),
        labels,
        confidence,
        crowd=model,
        rule=rule,
        sample_of=lambda r: samples[r],
        redraws=redraws,
        extendable=extendable and not stages,
        queries_per_hit=batch.queries_per_hit,
        floors=[floor for _, floor in stages] or None,
        **common,
    )
    scale = len(qids) / batch_size if batch_size else 1.0
    figures = forecast.as_dict()
    for key in ("kept_share", "kept_share_se", "kept_with_sample"):
        figures[key] *= scale
    figures["per_stage_kept"] = [share * scale for share in figures["per_stage_kept"]]
    figures["machine_labelled_share"] = figures["kept_share"]
    figures["kept_share"] = figures.pop("kept_with_sample")
    return base | figures


def _audit_crowd(batch: Batch, crowd: str | None, escalation_cap: int | None, until: str):
    """(crowd model or None, what it is in words, the reference rule) for :func:`audit_routing`."""
    from genderbias.crowd.simulation.workers import crowd_from_dict, crowd_from_figures

    sample = read_sample(batch) if calibration_batch(batch) is not None else None
    if sample is not None and sample.reference is not None and escalation_cap is None and until == "majority":
        rule = sample.reference
    else:
        rule = reference_rule(reference_record(batch, escalation_cap, until))
    if crowd is None:
        crowd = "fitted" if sample is not None and sample.votes is not None and len(sample.votes) else "none"
    if crowd == "none":
        return None, "none: the labels file is the crowd's (no crowd error, no escalation)", rule
    if crowd == "fitted":
        if sample is None:
            raise StateError(
                f"batch {batch.name!r} has no calibration sample to fit a crowd model to; give --crowd FILE"
            )
        return crowd_from_figures(fitted_crowd(batch, sample)), "fitted to the calibration sample's votes", rule
    path = Path(crowd)
    try:  # through the one text reader: bounded lines and size (a newline-free file is refused at its first MiB)
        with open_text(path) as lines:
            data = json.loads("\n".join(lines))
        model = crowd_from_dict(data if isinstance(data, dict) else {}, tuple(LABELS))
    except OSError as exc:
        raise InputError(str(path), None, f"cannot read the crowd model ({exc.strerror})") from None
    except InputError:  # the reader's own refusal names the file and line
        raise
    except ValueError as exc:
        raise InputError(str(path), None, f"not a crowd model: {exc}") from None
    return model, f"the crowd model in {path.name}", rule
