"""The crowd estimators as crowd-kit's and scikit-learn's: any hashable labels
(``DawidSkene(labels=(0, 1))``, a TypeError before), ``get_params`` and a ``repr`` of their parameters."""

import pandas as pd
import pytest

from genderbias.crowd.aggregators import DawidSkene, MajorityVote, Wawa

# Three workers, four tasks: t1 and t2 unanimous, t3 two to one, t4 two to one the other way.
ANSWERS = pd.DataFrame(
    [
        (task, worker, label)
        for task, labels in {"t1": (1, 1, 1), "t2": (0, 0, 0), "t3": (1, 1, 0), "t4": (0, 0, 1)}.items()
        for worker, label in zip(("w1", "w2", "w3"), labels, strict=True)
    ],
    columns=["task", "worker", "label"],
)
EXPECTED = {"t1": 1, "t2": 0, "t3": 1, "t4": 0}  # every model agrees with the majority on these


@pytest.mark.parametrize("model", [MajorityVote, Wawa, DawidSkene])
def test_int_labels_are_taken_and_given_back(model):
    fitted = model(labels=(0, 1)).fit(ANSWERS)
    assert fitted.labels_.to_dict() == EXPECTED
    assert list(fitted.probas_.columns) == [0, 1]
    # the same answers written as text give the same probabilities
    texts = model(labels=("no", "yes")).fit(ANSWERS.assign(label=ANSWERS["label"].map({0: "no", 1: "yes"})))
    assert fitted.probas_.to_numpy() == pytest.approx(texts.probas_.to_numpy())


def test_labels_none_takes_those_the_answers_give_and_unknown_labels_are_named():
    assert list(DawidSkene(labels=None).fit(ANSWERS).probas_.columns) == [0, 1]
    with pytest.raises(ValueError, match=r"unknown label\(s\) 1; expected one of 0, 2"):
        DawidSkene(labels=(0, 2)).fit(ANSWERS)
    with pytest.raises(ValueError, match=r"task 't1''s true label 5 is not one of 0, 1"):
        DawidSkene(labels=(0, 1)).fit(ANSWERS, true_labels={"t1": 5})
    assert DawidSkene(labels=(0, 1)).fit(ANSWERS, true_labels={"t3": 0}).labels_["t3"] == 0


def test_repr_and_get_params_give_the_parameters():
    assert repr(DawidSkene()) == "DawidSkene(n_iter=100, tol=1e-06, model='auto', labels=('n', 'f', 'm', 'o'))"
    assert DawidSkene(n_iter=5, labels=(0, 1)).get_params() == {
        "n_iter": 5,
        "tol": 1e-6,
        "model": "auto",
        "labels": (0, 1),
    }
    assert repr(MajorityVote(labels=(0, 1))) == "MajorityVote(labels=(0, 1))"
    assert repr(Wawa(labels=None)) == "Wawa(labels=None)"
