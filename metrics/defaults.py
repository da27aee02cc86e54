"""The metrics' names and default parameters, light enough for forms and settings objects.

The computing modules (:mod:`metrics.core`, :mod:`metrics.significance`) take their
defaults from here, so a page, the API and a command start from the same values
without loading numpy, pandas or scipy.
"""

#: Metrics in the order of the papers' tables.
METRICS = ("RaB", "ARaB", "NFaiRR", "TExFAIR")
#: Rank cutoffs of the SIGIR 2020 tables.
DEFAULT_CUTOFFS = (5, 10, 20, 30)
#: How deep a background run is read for NFaiRR's ideal ranking.
BACKGROUND_DEPTH = 200
#: NFaiRR's τ: a document with at most this many representative words is neutral.
DEFAULT_THRESHOLD = 1
#: Bootstrap resamples and seed for confidence intervals.
DEFAULT_SAMPLES = 1000
DEFAULT_SEED = 0
#: CRBO (Abolghasemi et al., ECIR 2024): RBO's persistence p and the ranks compared.
CRBO_P = 0.9
CRBO_DEPTH = 10
#: Paired-variant preference: the version suffixes of a document's docids (male, female, neutral).
VARIANT_VERSIONS = ("m", "f", "n")
