"""Exports of a batch's labelled query sets (:mod:`.services`: with their dataset cards, for the batch
page's downloads and ``export_queries``) and the study's facts every published description states
(:mod:`.selectors`: :func:`~.selectors.study_facts`, which other apps read through
:mod:`annotation.selectors`). Publishing the study itself (the dataset folder, the paper bundle) is the
``publishing`` app's, above ``metrics``.
"""
