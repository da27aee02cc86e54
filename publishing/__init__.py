"""The publishing app, the top floor: what a study publishes, from the annotations and the metrics.

Data flows pooling -> annotation -> metrics -> publishing; no app below imports this one
(``tests/test_architecture.py``). It reads the crowd through :mod:`annotation.selectors` (the study's
facts: :func:`annotation.selectors.study_facts`) and the reports through :mod:`metrics.selectors`.

- The dataset: a batch as a Hugging Face-ready folder (Parquet configurations, the Hub card,
  Croissant with its RAI fields). Pure: :mod:`.tables`, :mod:`.statements`, :mod:`.hub_card`,
  :mod:`.croissant`. Writes: :mod:`.services.dataset`.
- The paper bundle of a report (:mod:`.services.paper`): its tables as LaTeX (:mod:`.latex`), the
  methods text (:mod:`.methods_text`), the bibliography (:mod:`.bibliography`), the venues'
  checklists (:mod:`.checklists`) and the task page's screenshot (:mod:`.screenshot`).
- Shells: :mod:`.views`, :mod:`.api` with :mod:`.serializers`, :mod:`.forms`, the ``publish_dataset``
  and ``paper`` commands, the ``dataset_forms`` template tags. Their URLs keep the paths and names they
  had under the annotation and metrics apps (``config/urls.py`` adds :mod:`.urls` and :mod:`.api_urls`).
"""
