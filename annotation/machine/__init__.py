"""Machine labelling: pre-labellers, blind calibration against crowd samples, routing with a
finite-sample guarantee (the statistics are :mod:`genderbias.machine`'s; the modules: docs/architecture.md).
"""
