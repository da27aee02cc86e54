"""The publishing app, the top floor: what a study publishes (a batch as a Hugging Face-ready dataset folder, a
report's paper bundle), from the annotations and the metrics (its modules: docs/architecture.md).

Data flows pooling -> annotation -> metrics -> publishing; no app below imports this one. It reads the crowd through
:mod:`annotation.selectors` and the reports through :mod:`metrics.selectors`. Its URLs keep the paths and names they
had under the annotation and metrics apps.
"""
