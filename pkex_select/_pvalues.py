"""Permutation p-values of Shapley values, and their corrections for multiplicity.

Every permutation of the labels already yields the whole Shapley vector, so the joint null
distribution of all features is at hand: the Westfall-Young maxT step-down procedure uses it
to control the family-wise error without assuming independence between features.
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import false_discovery_control

__all__ = [
    "adjusted_pvalues",
    "CORRECTIONS",
    "feature_statistics",
    "first_stage",
    "holm_pvalues",
    "maxt_pvalues",
    "overall_pvalue",
    "permutation_pvalues",
    "permutation_tests",
    "permutations_needed",
    "raised_maxt_pvalues",
    "smallest_adjusted_pvalue",
    "PermutationTests",
    "RESAMPLING_RISK",
    "sequential_looks",
    "settled",
    "studentise",
    "weighted_min_pvalue",
]

CORRECTIONS = ("maxT", "holm", "fdr_bh")
# A permuted value within this many ulps of the observed one counts as a tie, as in
# scipy.stats.permutation_test: a permutation that reproduces the statistic up to rounding
# is as extreme as the observation.
_TIE_ULPS = 100


def _at_least(permuted, observed):
    tolerance = _TIE_ULPS * np.finfo(np.float64).eps * np.abs(observed)
    return permuted >= observed - tolerance


@dataclass(frozen=True)
class PermutationTests:
    """Permutation tests of an attribution, all from one set of permutations of the labels.

    Attributes
    ----------
    pvalue : float
        The overall test (independence for HSIC, equal distributions for MMD): the
        statistic at every scale and the largest per-feature statistic, combined by weighted
        min-p (see ``pvalue_`` of :class:`~pkex_select.HSICShapleySelector`).
    pvalues : ndarray of shape (n_features,)
        Raw per-feature p-values: of the Shapley value with one scale; with several, of the
        larger of the feature's studentised values at each scale.
    adjusted_pvalues : ndarray of shape (n_features,)
        ``pvalues`` corrected for multiplicity by ``correction``; constant features are
        left out of the family and get 1.
    correction : str
    statistics : ndarray of shape (n_permutations + 1, n_scales)
        Each scale's statistic over the off-diagonal pairs, normalised as in the sum over
        scales: observed labels first, then each permutation.
    null_distribution : ndarray of shape (n_permutations, n_features)
        The Shapley values under each permutation.
    """

    pvalue: float
    pvalues: np.ndarray
    adjusted_pvalues: np.ndarray
    correction: str
    statistics: np.ndarray
    null_distribution: np.ndarray


def smallest_adjusted_pvalue(correction, n_permutations, family_size):
    """The smallest adjusted p-value ``correction`` can give a lone significant feature.

    A permutation p-value is at least 1 / (1 + B). maxT compares each feature with the
    permuted maxima, so its smallest adjusted p-value is that too; Holm and
    Benjamini-Hochberg multiply the smallest raw p-value by the family size m.
    """
    smallest = 1.0 / (1.0 + n_permutations)
    return smallest if correction == "maxT" else min(1.0, family_size * smallest)


def permutations_needed(correction, alpha, family_size):
    """The fewest permutations whose smallest adjusted p-value is at most ``alpha / 2``, so
    that a clearly significant feature can be selected at level ``alpha``."""
    reach = 1.0 if correction == "maxT" else family_size
    return max(1, math.ceil(2.0 * reach / alpha) - 1)


def permutation_tests(scale_values, scale_statistics, scales, correction, family):
    """Every test of an attribution (:class:`PermutationTests`).

    Parameters
    ----------
    scale_values : ndarray of shape (n_scales, 1 + n_permutations, n_features)
        Each scale's Shapley values, normalised as in the sum; observed labels first.
    scale_statistics : ndarray of shape (1 + n_permutations, n_scales)
    scales : sequence of float
    correction : {"maxT", "holm", "fdr_bh"}
    family : ndarray of bool of shape (n_features,)
        The features tested together.
    """
    tested = feature_statistics(scale_values)
    return PermutationTests(
        pvalue=overall_pvalue(tested, scale_statistics, scales),
        pvalues=permutation_pvalues(tested),
        adjusted_pvalues=adjusted_pvalues(tested, correction, family),
        correction=correction,
        statistics=scale_statistics,
        null_distribution=scale_values.sum(axis=0)[1:],
    )


def permutation_pvalues(values):
    """One-sided p-values ``(1 + #{perm >= observed}) / (1 + n_perm)`` per column.

    ``values`` has shape (1 + n_permutations, n_columns), the observed row first.
    """
    observed, permuted = values[0], values[1:]
    return (1.0 + np.sum(_at_least(permuted, observed), axis=0)) / (1.0 + permuted.shape[0])


def studentise(values):
    """Centre and scale each column by its mean and standard deviation over all permutations.

    The observed labels (the identity permutation) are included, so that the centring and
    scaling are the same function of the set of permutations whichever of them is the
    observed one: permutation tests on the studentised values stay exact. A column without
    a finite, positive variance (a constant feature, or one already set to -inf) becomes
    -inf: it can never be significant.
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        std = values.std(axis=0)
        scaled = (values - values.mean(axis=0)) / std
    scaled[:, ~(np.isfinite(std) & (std > 0))] = -np.inf
    return scaled


def feature_statistics(scale_values):
    """What the per-feature tests compare: the values, or with several scales the larger of
    each feature's studentised values at each scale.

    A feature whose difference shows at one bandwidth scale is then tested at that scale,
    rather than through a sum in which the other scale's noise dilutes it; the maximum is
    calibrated by the same permutations, so every test stays exact. With one scale it is the
    values themselves.

    Parameters
    ----------
    scale_values : ndarray of shape (n_scales, 1 + n_permutations, n_features)

    Returns
    -------
    ndarray of shape (1 + n_permutations, n_features)
    """
    if len(scale_values) == 1:
        return scale_values[0]
    return np.max([studentise(values) for values in scale_values], axis=0)


def maxt_pvalues(values):
    """Westfall-Young maxT step-down adjusted p-values, one-sided (large values significant).

    The statistics are the studentised values (:func:`studentise`), so that features with a
    wider null spread do not dominate the maximum. With the features sorted by their
    observed statistic, the adjusted p-value of the k-th is the share of permutations whose
    largest statistic over the k-th and all less significant features reaches it, made
    monotone (Westfall and Young, 1993, Algorithm 2.8).

    Parameters
    ----------
    values : ndarray of shape (1 + n_permutations, n_features)

    Returns
    -------
    ndarray of shape (n_features,)
    """
    statistics = studentise(values)
    observed, permuted = statistics[0], statistics[1:]
    order = np.argsort(-observed, kind="stable")
    # Successive maxima from the least significant feature upwards.
    running_max = np.maximum.accumulate(permuted[:, order[::-1]], axis=1)[:, ::-1]
    with np.errstate(invalid="ignore"):  # -inf against -inf: a constant feature, never significant
        exceed = _at_least(running_max, observed[order])
    adjusted = (1.0 + exceed.sum(axis=0)) / (1.0 + permuted.shape[0])
    adjusted = np.maximum.accumulate(adjusted)
    adjusted[~np.isfinite(observed[order])] = 1.0
    result = np.empty_like(adjusted)
    result[order] = adjusted
    return result


def holm_pvalues(pvalues):
    """Holm's step-down adjustment (family-wise error, any dependence)."""
    pvalues = np.asarray(pvalues, dtype=np.float64)
    m = pvalues.size
    order = np.argsort(pvalues, kind="stable")
    adjusted = np.maximum.accumulate((m - np.arange(m)) * pvalues[order])
    result = np.empty(m)
    result[order] = np.minimum(adjusted, 1.0)
    return result


def adjusted_pvalues(values, correction, family):
    """Adjusted p-values of the features in ``family`` (a mask); 1 outside it.

    Parameters
    ----------
    values : ndarray of shape (1 + n_permutations, n_features)
        Shapley values, the observed row first.
    correction : {"maxT", "holm", "fdr_bh"}
    family : ndarray of bool of shape (n_features,)
        The features tested (constant features are left out: they cannot be selected).
    """
    result = np.ones(values.shape[1])
    if not family.any():
        return result
    members = values[:, family]
    if correction == "maxT":
        result[family] = maxt_pvalues(members)
    elif correction == "holm":
        result[family] = holm_pvalues(permutation_pvalues(members))
    else:
        result[family] = false_discovery_control(permutation_pvalues(members), method="bh")
    return result


def overall_pvalue(values, scale_statistics, scales):
    """The overall permutation test: the statistic at every scale and the largest per-feature
    statistic, combined by weighted min-p.

    Three kinds of statistic share one set of permutations, each with a share of the level:

    - the widest scale's statistic (1/2), whose joint kernel is about as wide as the joint
      median heuristic: the standard kernel test, which sees dependence or drift spread thin
      over many features;
    - the largest studentised per-feature statistic (1/3, :func:`feature_statistics`), which
      sees it concentrated in one or a few features, where the joint statistic is diluted by
      the others;
    - the other scales' statistics (1/6 between them): narrower joint kernels, which see
      changes in the dependence between a few features (a correlation at small d, XOR).

    Each permutation's p-value under each statistic is its rank among all permutations; the test
    statistic is the smallest p-value divided by its share, calibrated by the same
    permutations (weighted min-p aggregation, as in MMDAgg, Schrab et al., 2023), so the
    test is exact at any level whatever the dependence between the statistics. The shares
    were chosen from ``python -m benchmarks.power`` (docs/user_guide/tests.rst): the
    standard test's half keeps its power where it is strong, and power lost to the others is
    small because the statistics are correlated.

    Parameters
    ----------
    values : ndarray of shape (1 + n_permutations, n_features)
        Per-feature statistics (the values, or :func:`feature_statistics`).
    scale_statistics : ndarray of shape (1 + n_permutations, n_scales)
    scales : sequence of float
        The bandwidth scale of each column of ``scale_statistics``.

    Returns
    -------
    float
    """
    widest = int(np.argmax(scales))
    others = [k for k in range(len(scales)) if k != widest]
    statistics = np.column_stack(
        [scale_statistics[:, widest], studentise(values).max(axis=1), scale_statistics[:, others]]
    )
    shares = np.array([1 / 2, 1 / 3] + [1 / 6 / max(len(others), 1)] * len(others))
    return weighted_min_pvalue(statistics, shares)


def weighted_min_pvalue(statistics, shares):
    """Permutation p-value of ``min_k p_k / shares_k`` over the columns (large significant).

    Parameters
    ----------
    statistics : ndarray of shape (1 + n_permutations, n_statistics)
        The observed labels first.
    shares : ndarray of shape (n_statistics,)
        Positive; only their ratios matter.

    Returns
    -------
    float
    """
    n_perm = statistics.shape[0]
    # The p-value of every permutation under each statistic: its rank among them all.
    rank_pvalues = np.empty_like(statistics)
    for k, column in enumerate(statistics.T):
        sorted_column = np.sort(column)
        tolerance = _TIE_ULPS * np.finfo(np.float64).eps * np.abs(column)
        at_least = n_perm - np.searchsorted(sorted_column, column - tolerance, side="left")
        rank_pvalues[:, k] = at_least / n_perm
    smallest = (rank_pvalues / shares).min(axis=1)
    return float((1.0 + np.sum(smallest[1:] <= smallest[0])) / n_perm)


# The chance, over all of a fit's decisions together, that a decision settled early differs
# from the one the p-value of infinitely many permutations would take (resampling risk).
RESAMPLING_RISK = 1e-3
# Its shares (settled): the features' rejections together, the overall test, the features'
# keepings. The first two decide how soon the permutations can stop (a rejection settles
# first with no permutation as extreme as the observed labels), so they take the most.
_REJECT_SHARE, _OVERALL_SHARE, _KEEP_SHARE = 0.4, 0.4, 0.2


# The looks of the sequential rule and their shares of the risk: the first as soon as a
# rejection can settle, the second at three times as many permutations, where decisions
# nearer alpha settle (a keeping at p of about 0.1 rather than 0.15).
_LOOK_SHARES, _LOOK_SPACING = (0.8, 0.2), 3


def first_stage(alpha, risk=RESAMPLING_RISK):
    """The fewest permutations B after which :func:`settled` can settle a rejection at
    ``alpha`` with ``risk``: where none is as extreme as the observed labels,
    ``(1 - alpha)^B`` is at most the rejections' share of it, 0.4 ``risk``."""
    return math.ceil(math.log(_REJECT_SHARE * risk) / math.log1p(-alpha))


def sequential_looks(alpha, n_permutations, risk=RESAMPLING_RISK):
    """The looks of the sequential maxT rule: (permutations run, share of ``risk``) pairs.

    The first look comes after :func:`first_stage` at its share (157 permutations at alpha
    = 0.05), the second after three times as many; a look is made only where at least as
    many permutations would remain after it. A decision reported at a look was settled
    there, so all of them together differ from those of infinitely many permutations with
    probability at most the sum of the looks' shares, ``risk`` (a union over the looks).
    """
    first = first_stage(alpha, _LOOK_SHARES[0] * risk)
    looks = [(first * _LOOK_SPACING**k, share * risk) for k, share in enumerate(_LOOK_SHARES)]
    return [(count, share) for count, share in looks if 2 * count < n_permutations]


def raised_maxt_pvalues(scale_values, family):
    """The maxT adjusted p-values with each feature's observed statistic raised by one
    standard error of its studentisation: what :func:`settled` settles keepings on.

    :func:`studentise` divides by a standard deviation over the permutations run, whose
    relative standard error is about ``1 / sqrt(2 B)`` for a normal null and more for a
    heavy-tailed one. Over 153 permutations it moved a relevant feature's statistic from
    5.06 (over 999) to 3.55 and its adjusted p-value from 0.047 to 0.16, far beyond the
    binomial spread of its count (``python -m benchmarks.games.sequential``). A feature is
    settled as not rejected only where it stays so with its observed statistic
    ``1 + 1 / sqrt(2 B)`` times as large: enough for that feature, where three standard
    errors also held back noise features of p about 0.13 at the second look, each a
    further pass over the pairs.

    Parameters
    ----------
    scale_values : ndarray of shape (n_scales, 1 + n_permutations, n_features)
    family : ndarray of bool of shape (n_features,)

    Returns
    -------
    ndarray of shape (n_features,)
    """
    statistics = studentise(feature_statistics(scale_values))
    margin = 1.0 / math.sqrt(2.0 * (statistics.shape[0] - 1))
    observed = statistics[0]
    statistics[0] = np.where(observed > 0, observed * (1.0 + margin), observed)
    return adjusted_pvalues(statistics, "maxT", family)


def settled(
    adjusted_pvalues, pvalue, n_permutations, alpha, risk=RESAMPLING_RISK, keep_pvalues=None
):
    """Whether each maxT decision ``p <= alpha``, and the overall test's, is settled after
    ``n_permutations``.

    A permutation p-value ``(1 + c) / (1 + B)`` counts c permutations at least as extreme
    as the observed labels; c is binomial with the p-value of infinitely many permutations,
    p*. A decision is settled where the count is implausible on the other side of alpha:
    ``P(Binomial(B, alpha) <= c) <= r`` (so p* < alpha: reject) or ``P(Binomial(B, alpha)
    >= c) <= r`` (so p* > alpha: keep). Then it differs from that of p* with probability
    at most r (Gandy, JASA 104, 2009, with one look).

    The shares r of ``risk`` follow the step-down's order. Sorted by observed statistic,
    the maxT adjusted p-values are running maxima of raw ones, p*_i = max_{j <= i} q_j, and
    so are their counts, C_i = max_{j <= i} c_j, with c_j binomial with q_j. Let m features
    have p* <= alpha. A feature i > m settled as a rejection has C_i small, so c_{m+1}
    small with q_{m+1} > alpha: every wrong rejection is this one event, of probability at
    most r. A feature i <= m settled as kept has some c_j large with j <= m, q_j <= alpha:
    at most m such events. So the rejections share 0.4 ``risk`` as one, the keepings share
    0.2 ``risk`` equally among the features, and the overall test takes 0.4 ``risk``:
    all decisions together differ from those of p* with probability at most ``risk``.

    The counts are binomial for statistics fixed in advance; the studentised ones of
    several scales (:func:`feature_statistics`) are scaled over the permutations run, which
    moves a feature with a heavy-tailed null further, so a keeping is settled on
    ``keep_pvalues``, those of raised statistics (:func:`raised_maxt_pvalues`).

    Parameters
    ----------
    adjusted_pvalues : ndarray
        The features' maxT adjusted p-values from ``n_permutations`` permutations.
    pvalue : float
        The overall test's p-value from the same permutations.
    n_permutations : int
    alpha : float
    risk : float, default=RESAMPLING_RISK
    keep_pvalues : ndarray or None
        The p-values a feature's keeping (not rejected) is settled on
        (:func:`raised_maxt_pvalues`); ``adjusted_pvalues`` when None.

    Returns
    -------
    features : ndarray of bool
    overall : bool
    """
    from scipy.stats import binom

    def counts(pvalues):
        return np.rint(np.asarray(pvalues, dtype=np.float64) * (n_permutations + 1)) - 1

    def rejected(count, share):  # so few as extreme that p* > alpha is implausible
        return binom.cdf(count, n_permutations, alpha) <= share

    def kept(count, share):  # so many that p* <= alpha is implausible
        return binom.sf(count - 1, n_permutations, alpha) <= share

    adjusted = counts(adjusted_pvalues)
    keep_counts = adjusted if keep_pvalues is None else counts(keep_pvalues)
    keep_share = _KEEP_SHARE * risk / max(adjusted.size, 1)
    features = rejected(adjusted, _REJECT_SHARE * risk) | kept(keep_counts, keep_share)
    overall, overall_share = counts(pvalue), _OVERALL_SHARE * risk
    return features, bool(rejected(overall, overall_share) | kept(overall, overall_share))
