"""Bandwidths chosen together, with y (``bandwidth="alignment"``).

The median heuristic gives every feature a bandwidth from its own spread, whatever it does
for y. In the paper's game that penalises continuous features: their factor is below 1 on
almost every pair, so adding one narrows the joint kernel and its value pays for that, while
a binary feature (factor 1 on half the pairs) costs the others little. Alignment chooses the
bandwidths together, as a Gaussian process chooses its length scales, by maximising the
centred kernel-target alignment of the product kernel K with the target's kernel L,

    A(K, L) = <H K H, H L H>_F / (||H K H||_F ||H L H||_F)

(Cortes, Mohri and Rostamizadeh, JMLR 13, 2012), less a small penalty on the joint kernel's
narrowness, over the log kernel parameters of the numeric features: L-BFGS-B with the exact
gradient on the pairs of up to 600 rows. For the model game a categorical column is aligned
too, as the factor exp(-gamma [a != b]) (the delta kernel as gamma grows): an identifier or a
label y does not depend on is widened to a factor near 1 instead of cutting the joint kernel
to its diagonal. A feature y does not depend on is widened until
its factor is 1 on nearly every pair (value about 0 in every game), and of two features
that carry the same information the penalty keeps one.
"""

import numpy as np
from scipy.optimize import minimize

from ._plan import subsample_rows
from .kernels import factor_of_difference, kernel_distances

__all__ = ["aligned_bandwidths", "alignment_rows", "canonical_order"]

# Subsample pairs times features: about 50 MB per float64 array.
_PAIR_FEATURES = 6_000_000
_MAX_ROWS = 600
# The penalty lambda sum_j gamma_j mean(u_j), the mean of -log K over the pairs for the RBF
# and Laplacian kernels, subtracted from log A. It keeps one of two features that carry the
# same information: the selection study (python -m benchmarks.selection, both panels)
# ranked 0.005 ahead of 0 and 0.05.
_PENALTY = 0.005
# A bandwidth s enters gamma as s^-power.
_POWER = {"rbf": 2.0, "cauchy": 2.0, "laplacian": 1.0}
# log gamma moves at most this far below (wider) or above (narrower) its start: e^-10 makes
# a factor 1 to 4 digits on a typical pair, e^7 nearly a delta kernel.
_WIDER, _NARROWER = 10.0, 7.0


def alignment_rows(n_samples, n_features, random_state=None):
    """The rows whose pairs the alignment is computed on: all of them up to 600 (fewer
    beyond 20 features, to bound memory), else a uniform subsample, sorted."""
    most = min(_MAX_ROWS, int((2 * _PAIR_FEATURES / max(n_features, 1)) ** 0.5) + 1)
    return subsample_rows(n_samples, most, random_state)


def canonical_order(data, kernels, columns):
    """``columns`` sorted by kernel, then by their values: the order the optimiser sees.

    Its sums then do not depend on the order of the columns to the last digit, which
    L-BFGS-B would turn into differences at its tolerance; a knockoff swap must negate W
    exactly.
    """
    kernel_codes = np.unique(np.asarray(kernels)[columns], return_inverse=True)[1]
    return columns[np.lexsort(np.vstack([data[:, columns], kernel_codes]))]


def aligned_bandwidths(data, kernels, bandwidths, gammas, target_gram, align_categories=False):
    """Bandwidths of the numeric features that maximise the penalised centred alignment, and
    (with ``align_categories``) the factors of the categorical ones on pairs that differ.

    Parameters
    ----------
    data : ndarray of shape (n_rows, n_features)
        Standardised numeric columns and integer-coded categorical ones, on the rows of
        :func:`alignment_rows`.
    kernels : sequence of str
        Each column's kernel; "delta" columns keep their factor (they have no width).
    bandwidths, gammas : ndarray of shape (n_features,)
        The median heuristic's bandwidths and their kernel parameters (those of the columns
        without a width are returned as given).
    target_gram : ndarray of shape (n_rows, n_rows)
        The target's Gram matrix on those rows.
    align_categories : bool, default=False
        Whether the "delta" columns are aligned too, as exp(-gamma [a != b]).

    Returns
    -------
    bandwidths : ndarray of shape (n_features,)
        The aligned bandwidths; those of "delta" columns and of columns constant on the rows
        are returned as given.
    mismatch_factors : ndarray of shape (n_features,)
        Each "delta" column's factor on pairs whose values differ: 0 (the delta kernel)
        unless ``align_categories``; 0 for the other columns.
    """
    is_delta = np.array([k == "delta" for k in kernels])
    varying = np.ptp(data, axis=0) > 0
    widths = canonical_order(
        data, kernels, np.flatnonzero(varying & (~is_delta | align_categories))
    )
    aligned = np.array(bandwidths, dtype=np.float64)
    mismatch_factors = np.zeros(len(kernels))
    if widths.size == 0:
        return aligned, mismatch_factors
    n_rows = data.shape[0]
    first, second = np.triu_indices(n_rows, k=1)
    centred_target = target_gram - target_gram.mean(axis=0)
    centred_target -= centred_target.mean(axis=1)[:, None]
    target_pairs = centred_target[first, second]
    target_trace = np.trace(centred_target)
    fixed = np.ones(first.size)
    for j in np.flatnonzero(varying & is_delta & ~align_categories):
        fixed *= factor_of_difference(data[first, j] - data[second, j], "delta")
    # An aligned delta column's distance is [a != b]: its factor exp(-gamma u).
    distances = np.column_stack(
        [
            (data[first, j] != data[second, j]).astype(np.float64)
            if is_delta[j]
            else kernel_distances(data[first, j] - data[second, j], kernels[j])
            for j in widths
        ]
    )
    cauchy = np.array([kernels[j] == "cauchy" for j in widths], dtype=bool)
    exponential_distances = np.asfortranarray(distances[:, ~cauchy])
    cauchy_distances = distances[:, cauchy]
    mean_distances = distances.mean(axis=0)
    median_gammas = np.log(np.asarray(gammas, dtype=np.float64)[widths])
    # Every factor starts at a mean exponent of 2 / d over the pairs, so the joint kernel is
    # e^-2 on a typical pair: wide enough that what each feature adds to the alignment shows.
    start = np.log(2.0 / (widths.size * mean_distances))

    def negative_penalised_log_alignment(log_gammas):
        gammas = np.exp(log_gammas)
        # exp(-gamma u) factors multiply into one exponential of a matrix-vector product.
        joint = fixed * np.exp(-(exponential_distances @ gammas[~cauchy]))
        if cauchy_distances.size:
            cauchy_factors = 1.0 / (1.0 + cauchy_distances * gammas[cauchy])
            joint *= np.prod(cauchy_factors, axis=1)
        # H K H from the pairs: K's row sums count its unit diagonal.
        row_sums = 1.0 + np.bincount(first, joint, n_rows) + np.bincount(second, joint, n_rows)
        shift = row_sums.sum() / n_rows**2
        centred = joint - (row_sums[first] + row_sums[second]) / n_rows + shift
        centred_diagonal = 1.0 - 2.0 * row_sums / n_rows + shift
        cross = target_trace + 2.0 * joint @ target_pairs
        norm = 2.0 * centred @ centred + centred_diagonal @ centred_diagonal
        narrowness = _PENALTY * gammas * mean_distances
        if cross <= 0.0 or norm <= 0.0:
            return np.inf, np.zeros_like(log_gammas)
        # d/dK_ab of log cross - log(norm) / 2, for a pair's two symmetric entries, times
        # K_ab: d log K_ab / d log gamma_j is -gamma_j u_abj, or k_abj - 1 (Cauchy).
        pair_gradient = (2.0 * target_pairs / cross - 2.0 * centred / norm) * joint
        gradient = np.empty_like(log_gammas)
        gradient[~cauchy] = -gammas[~cauchy] * (pair_gradient @ exponential_distances)
        if cauchy_distances.size:
            gradient[cauchy] = pair_gradient @ (cauchy_factors - 1.0)
        return (
            0.5 * np.log(norm) - np.log(cross) + narrowness.sum(),
            narrowness - gradient,
        )

    result = minimize(
        negative_penalised_log_alignment,
        start,
        jac=True,
        method="L-BFGS-B",
        bounds=list(zip(start - _WIDER, start + _NARROWER)),
        options={"maxiter": 100},
    )
    numeric = ~is_delta[widths]
    powers = np.array([_POWER[kernels[j]] for j in widths[numeric]])
    aligned[widths[numeric]] *= np.exp((median_gammas[numeric] - result.x[numeric]) / powers)
    mismatch_factors[widths[~numeric]] = np.exp(-np.exp(result.x[~numeric]))
    return aligned, mismatch_factors
