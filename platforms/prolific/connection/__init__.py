"""Prolific's connection: its fields (:mod:`.kind`), the settings in force (:mod:`.selectors`) and its
test (:mod:`.services`), registered with core's connections by the app's ``ready()``."""
