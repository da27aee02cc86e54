"""Publishing a study: the Hugging Face-ready dataset folder of a batch (Parquet configurations,
the Hub card, Croissant with its RAI fields) and the study's facts every published description
states.

Pure: :mod:`.tables`, :mod:`.statements`, :mod:`.hub_card`, :mod:`.croissant`. Reads:
:mod:`.selectors` (:func:`~.selectors.study_facts`). Writes: :mod:`.services`. Shells:
:mod:`.views`, :mod:`.api` with :mod:`.serializers`, :mod:`.forms`.
"""
