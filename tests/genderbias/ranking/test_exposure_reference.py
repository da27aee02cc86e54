"""The exposure metrics' reference form (issue 40, item 5): rKL, rND, rRD as Yang & Stoyanovich's code
computes them and AWRF as FairRankTune does, against the reference code's own examples, the issue's
example, the reference code itself (ported below as the oracle) on random rankings, and FairRankTune.

The oracle: DataResponsibly/FairRank at commit fb8a5c5 — ``measures.py`` (``calculateNDFairness``,
``calculaterKL``, ``calculaterND``, ``calculaterRD``, ``calculateNormalizer``) and ``dataGenerator.py``
(``generateUnfairRanking``) — ported to Python 3 line by line: the same arithmetic, only the print
statements, ``long`` and the input checks dropped, and ``random`` passed in (seeded) so the test is
repeatable. Its example (``testMeasures.py``, ``demo_Measures.md``): 100 items, the first 50 protected,
ranked in order, cut point 10, printed with normaliser 1: rKL 1.15901724032, rND 0.660066334446,
rRD 1.08152800722.
"""

import math
import random

import numpy as np
import pandas as pd
import pytest

from genderbias.ranking import exposure, exposure_reference
from genderbias.ranking.exposure import ExposureSettings

# --- the reference code (FairRank fb8a5c5), ported ------------------------------------------------

LOG_BASE = 2
NORM_CUTPOINT = 10
NORM_ITERATION = 10


def ref_rkl(ranking_k, pro_k, user_n, pro_n):
    px = pro_k / ranking_k
    qx = pro_n / user_n
    if px == 0 or px == 1:
        px = 0.001
    if qx == 0 or qx == 1:
        qx = 0.001
    return px * math.log(px / qx, LOG_BASE) + (1 - px) * math.log((1 - px) / (1 - qx), LOG_BASE)


def ref_rnd(ranking_k, pro_k, user_n, pro_n):
    return abs(pro_k / ranking_k - pro_n / user_n)


def ref_rrd(ranking_k, pro_k, user_n, pro_n):
    input_ratio = pro_n / (user_n - pro_n)
    unpro_k = ranking_k - pro_k
    current_ratio = 0 if unpro_k == 0 else pro_k / unpro_k
    return abs(min(input_ratio, current_ratio) - input_ratio)


REF_TERMS = {"rKL": ref_rkl, "rND": ref_rnd, "rRD": ref_rrd}


def ref_nd_fairness(ranking, protected_group, cut_point, measure, normalizer):
    user_n, pro_n = len(ranking), len(protected_group)
    discounted = 0
    for count in range(1, user_n + 1):
        if count % cut_point == 0:
            pro_cut = set(ranking[0:count]).intersection(protected_group)
            discounted += REF_TERMS[measure](count, len(pro_cut), user_n, pro_n) / math.log(count + 1, LOG_BASE)
    if normalizer == 0:
        raise ValueError("Normalizer equals to zero")
    return discounted / normalizer


def ref_generate_unfair_ranking(ranking, protected_group, fairness_probability, rng):
    pro_ranking = [x for x in ranking if x not in protected_group]  # (sic: the unprotected)
    unpro_ranking = [x for x in ranking if x in protected_group]  # (sic: the protected)
    pro_ranking.reverse()
    unpro_ranking.reverse()
    unfair = []
    while len(unpro_ranking) > 0 and len(pro_ranking) > 0:
        if rng.random() < fairness_probability:
            unfair.append(unpro_ranking.pop())
        else:
            unfair.append(pro_ranking.pop())
    if len(unpro_ranking) > 0:
        unpro_ranking.reverse()
        unfair = unfair + unpro_ranking
    if len(pro_ranking) > 0:
        pro_ranking.reverse()
        unfair = unfair + pro_ranking
    return unfair


def ref_branches(user_n, pro_n, measure, rng, iterations=NORM_ITERATION):
    """``calculateNormalizer``'s two averages (its normaliser is their maximum)."""
    probabilities = [0, 0.5] if measure == "rRD" else [0, 0.98]
    averages = []
    for probability in probabilities:
        results = []
        for _ in range(iterations):
            ranking = list(range(user_n))
            protected = list(range(pro_n))
            unfair = ref_generate_unfair_ranking(ranking, protected, probability, rng)
            results.append(ref_nd_fairness(unfair, protected, NORM_CUTPOINT, measure, 1))
        averages.append(float(np.mean(results)))
    return averages


# --- helpers ----------------------------------------------------------------------------------------

REFERENCE = ExposureSettings(form="reference")


def crisp(ranking, protected_group):
    """A ranked list of items as the platform's matrices: a protected item has 2 female words, another
    2 male words (τ = 1: every item gendered, wholly in its group); female is the protected group."""
    protected = {*protected_group}
    f = np.array([[2.0 if item in protected else 0.0 for item in ranking]])
    m = np.array([[0.0 if item in protected else 2.0 for item in ranking]])
    return f, m, np.array([len(ranking)])


def ours(ranking, protected_group, measure, settings=REFERENCE, cutoff=None):
    f, m, n = crisp(ranking, protected_group)
    return exposure.rank_fairness(f, m, n, cutoff or len(ranking), measure, settings)[0]


def ours_sums(ranking, protected_group, measure, step=10):
    f, m, n = crisp(ranking, protected_group)
    a_f, _, gendered = exposure.alignment(f, m)
    total, generated = exposure_reference.reference_rank_sums(a_f, gendered, n, len(ranking), measure, step)
    return total[0], {p: values[0] for p, values in generated.items()}


# --- the reference code's own example --------------------------------------------------------------


def test_the_reference_codes_own_example():
    """testMeasures.py / demo_Measures.md: 100 items ranked in order, the first 50 protected, cut point 10.
    The demo printed the sums with normaliser 1; they are the reference form's numerators to the digit.
    By hand, rND = Σ_{i=10..50} ½/log2(i + 1) + (1/3)/log2 61 + (3/14)/log2 71 + (1/8)/log2 81 + (1/18)/log2 91."""
    ranking, protected = list(range(100)), list(range(50))
    printed = {"rKL": 1.15901724032, "rND": 0.660066334446, "rRD": 1.08152800722}
    by_hand = sum(0.5 / math.log2(i + 1) for i in (10, 20, 30, 40, 50)) + sum(
        (50 / i - 0.5) / math.log2(i + 1) for i in (60, 70, 80, 90)
    )
    assert by_hand == pytest.approx(printed["rND"], abs=1e-11)
    for measure, value in printed.items():
        total, generated = ours_sums(ranking, protected, measure)
        assert total == pytest.approx(value, abs=1e-11), measure
        assert total == pytest.approx(ref_nd_fairness(ranking, protected, 10, measure, 1), abs=1e-12)
        # The normaliser's deterministic branch (fairness probability 0: the protected last) is the
        # reference code's to the last digit, and here it is the larger: the normalised values are equal.
        averages = ref_branches(100, 50, measure, random.Random(0))
        assert generated[0.0] == pytest.approx(averages[0], abs=1e-12)
        assert averages[0] > averages[1] and generated[0.0] > max(generated.values()) - 1e-15
        expected = ref_nd_fairness(ranking, protected, 10, measure, max(averages))
        assert ours(ranking, protected, measure) == pytest.approx(expected, abs=1e-12), measure
    # Protected first is the most unfair for rKL and rND (symmetric at q = ½): 1. For rRD the code counts
    # an all-protected prefix as most unfair, but normalises by the protected-last list: 1.0815/1.4078.
    assert ours(ranking, protected, "rND") == pytest.approx(1.0)
    assert ours(ranking, protected, "rKL") == pytest.approx(1.0)
    assert ours(ranking, protected, "rRD") == pytest.approx(0.768235, abs=1e-6)


def test_the_issues_example_ten_male_then_ten_female():
    """Ten male then ten female documents, female protected: rND 1.000 in the reference form (the most
    unfair ranking of that list), 0.565 in the adapted one (issue 40)."""
    ranking = list(range(10, 20)) + list(range(10))  # items 0–9 are the women
    women = list(range(10))
    for measure in ("rKL", "rND", "rRD"):
        averages = ref_branches(20, 10, measure, random.Random(1))
        assert ours(ranking, women, measure) == pytest.approx(
            ref_nd_fairness(ranking, women, 10, measure, max(averages)), abs=1e-12
        )
        assert ours(ranking, women, measure) == pytest.approx(1.0)
    # Adapted: cut points 10 and 20 against the target ½, normalised by their exact maximum:
    # (½/log2 10) / (½/log2 10 + ½/log2 20) = 0.565.
    adapted = ours(ranking, women, "rND", ExposureSettings())
    assert adapted == pytest.approx((1 / math.log2(10)) / (1 / math.log2(10) + 1 / math.log2(20)))
    assert round(adapted, 3) == 0.565


# --- the reference code on random rankings -----------------------------------------------------------


def random_lists(count, seed):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        size = int(rng.integers(11, 61))
        protected = int(rng.integers(1, size))
        yield [int(x) for x in rng.permutation(size)], list(range(protected))


@pytest.mark.parametrize("measure", ["rKL", "rND", "rRD"])
def test_numerators_and_the_deterministic_normaliser_equal_the_reference_code(measure):
    """On 200 random crisp rankings (11–60 items, any share protected): the sums at cut points 5 and 10 and
    the normaliser's protected-last branch equal the code's; where the code's normaliser is that branch
    (its sampled average below it, and ours too), the normalised values are equal."""
    equal = 0
    for number, (ranking, protected) in enumerate(random_lists(200, seed=1)):
        for step in (5, 10):
            total, _ = ours_sums(ranking, protected, measure, step)
            assert total == pytest.approx(ref_nd_fairness(ranking, protected, step, measure, 1), abs=1e-12)
        total, generated = ours_sums(ranking, protected, measure)
        averages = ref_branches(len(ranking), len(protected), measure, random.Random(number))
        assert generated[0.0] == pytest.approx(averages[0], abs=1e-12)
        if averages[0] > averages[1] and generated[0.0] >= max(generated.values()):
            equal += 1
            expected = ref_nd_fairness(ranking, protected, 10, measure, averages[0])
            assert ours(ranking, protected, measure) == pytest.approx(expected, abs=1e-12)
    assert equal >= 60  # the comparison ran on a good part of the lists


@pytest.mark.parametrize(
    ("size", "protected", "measure"),
    [(30, 10, "rND"), (30, 20, "rND"), (22, 20, "rKL"), (40, 25, "rKL"), (16, 15, "rRD")],
)
def test_the_sampled_branch_is_the_expectation_of_the_codes_generator(size, protected, measure):
    """The code averages 10 rankings generated at fairness probability 0.98 (0.5 for rRD); the reference
    form takes that average's expectation (S_i = min(P, max(X, G_i − (N − P))), X binomial). The
    code's generator, run here 4,000 times, averages to it: within 4 s.e. of its mean (the s.e. is
    the sample's standard deviation / √4,000; lists where that branch is the larger one, as for a
    protected majority, and where it is not)."""
    rng = random.Random(20260101)
    probability = 0.5 if measure == "rRD" else 0.98
    items, group = list(range(size)), list(range(protected))
    draws = [
        ref_nd_fairness(ref_generate_unfair_ranking(items, group, probability, rng), group, 10, measure, 1)
        for _ in range(4000)
    ]
    _, generated = ours_sums(items, group, measure)
    se = np.std(draws, ddof=1) / math.sqrt(len(draws))
    assert abs(generated[probability] - np.mean(draws)) <= 4 * se + 1e-12, (generated[probability], np.mean(draws), se)


def test_undefined_where_the_reference_code_refuses():
    """One group only (the code: "protected group size" must lie strictly between 0 and N), no gendered
    document, or no cut point before the list's end (ten items, step 10: the code's normaliser is 0)."""
    for measure in ("rKL", "rND", "rRD"):
        assert math.isnan(ours(list(range(20)), list(range(20)), measure))  # all protected
        assert math.isnan(ours(list(range(20)), [], measure))  # none protected
        assert math.isnan(ours(list(range(10)), list(range(5)), measure))  # the one cut point is the end
        with pytest.raises(ValueError, match="Normalizer equals to zero"):
            ref_nd_fairness(
                list(range(10)), list(range(5)), 10, measure, max(ref_branches(10, 5, measure, random.Random(0)))
            )
    none = exposure.rank_fairness(np.zeros((1, 20)), np.zeros((1, 20)), np.array([20]), 20, "rND", REFERENCE)
    assert math.isnan(none[0])
    # A step below the cutoff gives the top 10 cut points: defined again.
    assert not math.isnan(ours(list(range(10)), list(range(5)), "rND", ExposureSettings(form="reference", step=5)))


def test_neutral_documents_keep_their_ranks_and_stay_outside_the_groups():
    """A neutral document (f + m ≤ τ) takes a rank but no group, as in the adapted form: the list
    women, neutral, men, … is measured on its gendered documents, cut by rank."""
    f = np.array([[2.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0, 0.0]])
    m = np.array([[0.0, 0.0, 2.0, 0.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 0.0, 2.0]])
    settings = ExposureSettings(form="reference", step=4)
    # Cut points 4, 8, 12; gendered G = 3, 7, 11; women S = 2, 2, 3; q = 3/11; δ = 1/log2 5, 1/log2 9, 1/log2 13.
    total = sum(abs(s / g - 3 / 11) / math.log2(i + 1) for i, g, s in ((4, 3, 2), (8, 7, 2), (12, 11, 3)))
    a_f, _, gendered = exposure.alignment(f, m)
    sums, _ = exposure_reference.reference_rank_sums(a_f, gendered, np.array([12]), 12, "rND", 4)
    assert sums[0] == pytest.approx(total, abs=1e-12)
    value = exposure.rank_fairness(f, m, np.array([12]), 12, "rND", settings)[0]
    assert 0 < value < 1


# --- AWRF: FairRankTune --------------------------------------------------------------------------


def test_awrf_reference_equals_fairranktunes_example():
    """FairRankTune's own example (examples/4_statisticalparitymetrics.ipynb): seven men then three women,
    p = 0.1: average attention M 7.4529, W 4.3206, MinMaxRatio 0.5797225914509614."""
    names = ["Joe", "Jack", "Nick", "David", "Mark", "Josh", "Dave", "Bella", "Heidi", "Amy"]
    women = {"Bella", "Heidi", "Amy"}
    f = np.array([[2.0 if name in women else 0.0 for name in names]])
    m = np.array([[0.0 if name in women else 2.0 for name in names]])
    settings = ExposureSettings(weights="geometric", p=0.1, form="reference")
    assert exposure.awrf(f, m, np.array([10]), 10, settings)[0] == pytest.approx(0.5797225914509614, abs=1e-12)
    from FairRankTune.Metrics import AWRF

    groups = {name: ("W" if name in women else "M") for name in names}
    value, per_group = AWRF(pd.DataFrame(names), groups, 0.1, "MinMaxRatio")
    assert value == pytest.approx(0.5797225914509614, abs=1e-15)
    assert per_group["M"] == pytest.approx(7.45290142857143) and per_group["W"] == pytest.approx(4.320615330000002)


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_awrf_reference_equals_fairranktune_on_random_lists(p):
    rng = np.random.default_rng(5)
    settings = ExposureSettings(weights="geometric", p=p, form="reference")
    from FairRankTune.Metrics import AWRF

    for _ in range(50):
        size = int(rng.integers(2, 30))
        women = rng.random(size) < rng.random()
        f, m = np.where(women, 2.0, 0.0)[None, :], np.where(women, 0.0, 2.0)[None, :]
        ours_value = exposure.awrf(f, m, np.array([size]), size, settings)[0]
        items = [f"d{i}" for i in range(size)]
        groups = {item: ("W" if woman else "M") for item, woman in zip(items, women, strict=True)}
        value, _ = AWRF(pd.DataFrame(items), groups, p, "MinMaxRatio")
        assert ours_value == pytest.approx(value, abs=1e-12)  # one group only: FairRankTune's 1 too


def test_awrf_reference_by_hand_and_without_groups():
    # dcg weights 1, 1/log2 3, ½: a woman, a man, a woman. Women: (1 + ½)/2 = 0.75 per member; the man 0.630930.
    f, m = np.array([[2.0, 0.0, 2.0]]), np.array([[0.0, 2.0, 0.0]])
    value = exposure.awrf(f, m, np.array([3]), 3, ExposureSettings(form="reference"))[0]
    assert value == pytest.approx((1 / math.log2(3)) / 0.75)
    assert math.isnan(exposure.awrf(np.zeros((1, 3)), np.zeros((1, 3)), np.array([3]), 3, REFERENCE)[0])


# --- the variant names the form -------------------------------------------------------------------


def test_the_variant_records_the_form_and_the_adapted_form_is_unchanged():
    assert ExposureSettings().awrf_variant() == "dcg" and ExposureSettings().rank_variant() == "female"
    reference = ExposureSettings(weights="geometric", p=0.1, target=0.4, step=5, form="reference")
    assert reference.awrf_variant() == "geometric:0.1,reference"  # the reference form has no target
    assert reference.rank_variant() == "female,reference,step=5"
    assert ExposureSettings(target=0.4, step=5).rank_variant() == "female,t=0.4,step=5"
    with pytest.raises(ValueError, match="unknown exposure form"):
        ExposureSettings(form="paper").validate()
    from genderbias.ranking.vocabulary import variant_form

    assert variant_form("female,reference,step=5") == "reference"
    assert variant_form("female,t=0.4") == variant_form("dcg") == "adapted"


def test_exposure_columns_take_the_form():
    f, m, n = crisp(list(range(10, 20)) + list(range(10)), list(range(10)))
    columns = exposure.exposure_columns(f, m, n, [10, 20], REFERENCE)
    assert columns["rND@20"][0] == pytest.approx(1.0)
    assert math.isnan(columns["rND@10"][0])  # ten men only: one group
    assert columns["AWRF@10"][0] == 1.0  # one group only: FairRankTune's 1
    adapted = exposure.exposure_columns(f, m, n, [20], ExposureSettings())
    assert adapted["rND@20"][0] == pytest.approx(0.565, abs=1e-3)
