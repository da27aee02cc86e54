"""The metrics' default parameters, light enough for forms and settings objects (their names,
directions and variants: :mod:`genderbias.ranking.vocabulary`).

The computing modules (:mod:`genderbias.ranking.measures`, :mod:`genderbias.stats.significance`) take their
defaults from here, so a page, the API and a command start from the same values
without loading numpy, pandas or scipy.
"""

#: The confidence level of the library's bootstrap and Wilson intervals (the metrics', the agreement report's
#: alpha, a plan's shares), and how a text names it. The methods that take a test's alpha (0.05) instead keep it.
LEVEL = 0.95
LEVEL_PERCENT = f"{LEVEL:.0%}"
#: Rank cutoffs of the SIGIR 2020 tables. Every report setting's default, bounds and help are read from its
#: declaration (:mod:`genderbias.options`), which takes the values from here.
DEFAULT_CUTOFFS = (5, 10, 20, 30)
#: Label sensitivity's cutoffs (each is a whole table of aggregations × policies × runs).
SENSITIVITY_CUTOFFS = (5, 10, 20)
#: The bounds of the cutoffs a form, the API or a command takes (each cutoff's measures cost a
#: pass over every run: a million cutoffs held a request for minutes): at most this many, each
#: at most :data:`MAX_CUTOFF` (the deepest rank a report reads).
MAX_CUTOFFS = 20
MAX_CUTOFF = 10000
#: How a run's tied documents (equal scores within a query) are ordered for the bias metrics
#: (:mod:`genderbias.ranking.ties`): ``tie-aware`` (default) takes every figure's expectation over all orders
#: of each tie group; ``trec_eval`` orders ties by docid descending (trec_eval's and ir_measures'
#: rule); ``file`` keeps the run's ranks as stored. Effectiveness always follows trec_eval.
TIES = ("tie-aware", "trec_eval", "file")
DEFAULT_TIES = "tie-aware"
#: A measure that is not linear in per-rank values (TExFAIR, AWRF, rKL, rND, rRD) is computed on
#: every arrangement of a query's tied top documents when there are at most this many, else on
#: this many drawn at random (the report's seed): :func:`genderbias.ranking.ties.tie_orders`.
TIE_DRAWS = 64
#: NFaiRR's background when no background run is given, and its variant label then.
COLLECTION_BACKGROUND = "collection"
#: How deep a background run is read for NFaiRR's ideal ranking.
BACKGROUND_DEPTH = 200
#: NFaiRR's τ: a document with at most this many representative words is neutral.
DEFAULT_THRESHOLD = 1
#: NFaiRR normalisers with a background run (see :mod:`genderbias.ranking.nfairr`'s docstring): the
#: background plus every compared run (default), or the background alone as the reference code.
NORMALISERS = ("comparison", "exact")
DEFAULT_NORMALISER = "comparison"
#: The exposure metrics (:mod:`genderbias.ranking.exposure`): AWRF's position weights (``dcg``, ``trec``,
#: ``geometric``) and the geometric weights' p; the target's female share of exposure; the
#: protected group of rKL/rND/rRD and their cut-point step (Yang & Stoyanovich: every 10 ranks).
AWRF_WEIGHTS = ("dcg", "trec", "geometric")
DEFAULT_AWRF_WEIGHTS = "dcg"
DEFAULT_AWRF_P = 0.5
DEFAULT_EXPOSURE_TARGET = 0.5
PROTECTED_GROUPS = ("female", "male")
DEFAULT_PROTECTED = "female"
DEFAULT_CUT_STEP = 10
#: The largest cut-point step (a step beyond the list's length leaves the one cut point min(k, n)).
MAX_CUT_STEP = 10_000
#: How the exposure metrics are defined (their wording: :data:`genderbias.ranking.vocabulary.FORM_DEFINITIONS`):
#: ``adapted`` (default), the platform's adaptation to documents ranked from a collection (the
#: target share as reference), or ``reference``, as the cited papers' reference code computes them.
EXPOSURE_FORMS = ("adapted", "reference")
DEFAULT_EXPOSURE_FORM = "adapted"
#: Bootstrap resamples and seed for confidence intervals.
DEFAULT_SAMPLES = 1000
DEFAULT_SEED = 0
#: Label sensitivity: the aggregations, the policies for disputed queries, and the least
#: confidence of a label under the ``confident`` policy (see :mod:`genderbias.crowd.sensitivity`).
AGGREGATIONS = ("majority", "dawid-skene", "wawa")
DISPUTED_POLICIES = ("drop", "aggregation", "adjudicated", "confident")
CONFIDENCE_THRESHOLD = 0.9
#: Label sensitivity of a batch labelled by a machine first: rows whose ``aggregation`` is
#: :data:`LABEL_SOURCE` and whose ``disputed`` column names where the labels came from.
LABEL_SOURCE = "label source"
LABEL_SOURCES = ("crowd only", "machine only", "hybrid")
#: CRBO (Abolghasemi et al., ECIR 2024): RBO's persistence p and the ranks compared.
CRBO_P = 0.9
CRBO_DEPTH = 10
#: Paired-variant preference: the version suffixes of a document's docids (male, female, neutral).
VARIANT_VERSIONS = ("m", "f", "n")
#: The papers' tables a report can be laid out as (:mod:`metrics.tables`), the first the default.
TABLE_LAYOUTS: tuple[str, ...] = ("ecir2024", "sigir2020", "exposure")
#: What a report on a batch's labels adds to each result (:mod:`genderbias.crowd.label_uncertainty`): the
#: label-corrected value, the interval with the labels' uncertainty and their share of its width,
#: the same for the paired difference against the baseline, and the t-test's p beside the combined one.
LABEL_UNCERTAINTY_COLUMNS = (
    "corrected",
    "combined_low",
    "combined_high",
    "label_share",
    "difference_low",
    "difference_high",
    "difference_corrected",
    "difference_combined_low",
    "difference_combined_high",
    "difference_label_share",
    "query_p_value",
)
