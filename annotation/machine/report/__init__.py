"""The machine's calibration report (:mod:`.selectors`)."""
