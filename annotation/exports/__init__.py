"""Exports of a batch's labelled query sets with their dataset cards (:mod:`.services`) and the study's
facts every published description states (:mod:`.selectors`)."""
