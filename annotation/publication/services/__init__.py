"""Writes of publication: the dataset folder (:mod:`.dataset`), exports with their dataset cards (:mod:`.exports`)."""
