"""Machine labelling: pre-labellers, blind calibration against crowd samples, routing with a
finite-sample guarantee, category shares (PPI++) and the alternative-annotator test.

Pure: :mod:`.prelabellers`, :mod:`.calibration_statistics`, :mod:`.routing_statistics`,
:mod:`.proportions`, :mod:`.alternative_annotator`, :mod:`.crowd_reliability`,
:mod:`.calibration_plots`. Reads: :mod:`.selectors` (runs, the calibration sample and its report,
the non-gendered sets by label source). Writes: :mod:`.services` (with the pre-labelling job,
:mod:`.services.background`). Shells: :mod:`.views`, :mod:`.api` with
:mod:`.serializers`, :mod:`.forms`.
"""
