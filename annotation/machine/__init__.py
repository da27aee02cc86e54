"""Machine labelling: pre-labellers, blind calibration against crowd samples, routing with a
finite-sample guarantee (the statistics are :mod:`genderbias.machine`'s).

Pure: :mod:`.prelabellers`, :mod:`.calibration_plots`, :mod:`.routing_text`. Reads: :mod:`.selectors`,
:mod:`.report`. Writes: :mod:`.services`. Shells: :mod:`.views`, :mod:`.api`, :mod:`.serializers`, :mod:`.forms`.
"""
