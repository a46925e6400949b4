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

import contextlib
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from joblib import effective_n_jobs
from scipy.optimize import minimize

from . import _integrals
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
# Pairs per chunk of the compiled sweep (20 features: 640 kB, in a core's cache); the chunks'
# partial sums are added in their order, whatever the number of threads.
_CHUNK_PAIRS = 4096
# Below this many pair-features an evaluation (about 1 ms) is too short to share.
_MIN_PARALLEL_PAIR_FEATURES = 1_000_000
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


def aligned_bandwidths(
    data, kernels, bandwidths, gammas, target_gram, align_categories=False, n_jobs=None
):
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
    n_jobs : int, default=None
        Threads that share each evaluation's sweep over the pairs (the values do not depend
        on it).

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
    mean_distances = distances.mean(axis=0)
    median_gammas = np.log(np.asarray(gammas, dtype=np.float64)[widths])
    # Every factor starts at a mean exponent of 2 / d over the pairs, so the joint kernel is
    # e^-2 on a typical pair: wide enough that what each feature adds to the alignment shows.
    start = np.log(2.0 / (widths.size * mean_distances))
    objective = PenalisedLogAlignment(
        distances, cauchy, fixed, first, second, target_pairs, target_trace, n_rows
    )
    with objective.workers(n_jobs):
        result = minimize(
            objective,
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


class PenalisedLogAlignment:
    """The loss L-BFGS-B minimises over the log kernel parameters, with its exact gradient:
    -log A(K, L) plus the narrowness penalty, from the pairs a < b of the rows.

    Parameters
    ----------
    distances : ndarray of shape (n_pairs, n_aligned)
        Each aligned factor's u on each pair: the factor is exp(-gamma u), or 1 / (1 +
        gamma u) where ``cauchy``.
    cauchy : ndarray of bool, shape (n_aligned,)
    fixed : ndarray of shape (n_pairs,)
        The product of the factors that are not aligned (delta columns).
    first, second : ndarray of int, shape (n_pairs,)
        Each pair's rows.
    target_pairs : ndarray of shape (n_pairs,)
        The centred target Gram matrix on the pairs.
    target_trace : float
        Its trace.
    n_rows : int
    compiled : bool, optional
        The compiled sweep (numba) or its NumPy twin; by default the compiled one where numba
        is installed. The compiled sweep adds the partial sums of fixed chunks of pairs in
        their order, so its values do not depend on the number of threads; the two agree to
        rounding (tested within 1e-12).
    """

    def __init__(
        self,
        distances,
        cauchy,
        fixed,
        first,
        second,
        target_pairs,
        target_trace,
        n_rows,
        compiled=None,
    ):
        self.compiled = _integrals.NUMBA if compiled is None else compiled
        self.cauchy = cauchy
        self.exponential_distances = np.ascontiguousarray(distances[:, ~cauchy])
        self.cauchy_distances = np.ascontiguousarray(distances[:, cauchy])
        self.mean_distances = distances.mean(axis=0)
        self.fixed, self.first, self.second = fixed, first, second
        self.target_pairs, self.target_trace, self.n_rows = target_pairs, target_trace, n_rows
        n_pairs = first.size
        self.n_chunks = max(1, -(-n_pairs // _CHUNK_PAIRS))
        self._executor = None
        if self.compiled:
            self.joint = np.empty(n_pairs)
            self.centred = np.empty(n_pairs)
        else:  # the NumPy twin's matrix-vector products want the pairs down the columns
            self.exponential_distances = np.asfortranarray(self.exponential_distances)

    @contextlib.contextmanager
    def workers(self, n_jobs):
        """Share the compiled sweeps among ``n_jobs`` threads (where the pairs are many
        enough) while the block runs."""
        threads = min(effective_n_jobs(n_jobs), os.cpu_count() or 1, self.n_chunks)
        work = self.first.size * self.cauchy.size
        if not self.compiled or threads < 2 or work < _MIN_PARALLEL_PAIR_FEATURES:
            yield self
            return
        # A pool of this process's threads, not joblib's: an evaluation lasts milliseconds,
        # less than a joblib backend takes to dispatch it.
        with ThreadPoolExecutor(threads) as executor:
            bounds = np.linspace(0, self.n_chunks, threads + 1).round().astype(int)
            self._executor, self._ranges = executor, list(zip(bounds[:-1], bounds[1:]))
            try:
                yield self
            finally:
                self._executor = None

    def __call__(self, log_gammas):
        gammas = np.exp(log_gammas)
        cross, norm, gradient = (self._compiled if self.compiled else self._numpy)(gammas)
        narrowness = _PENALTY * gammas * self.mean_distances
        if cross <= 0.0 or norm <= 0.0:
            return np.inf, np.zeros_like(log_gammas)
        return 0.5 * np.log(norm) - np.log(cross) + narrowness.sum(), narrowness - gradient

    def _numpy(self, gammas):
        first, second, n_rows, cauchy = self.first, self.second, self.n_rows, self.cauchy
        # exp(-gamma u) factors multiply into one exponential of a matrix-vector product.
        joint = self.fixed * np.exp(-(self.exponential_distances @ gammas[~cauchy]))
        if self.cauchy_distances.size:
            cauchy_factors = 1.0 / (1.0 + self.cauchy_distances * gammas[cauchy])
            joint *= np.prod(cauchy_factors, axis=1)
        # H K H from the pairs: K's row sums count its unit diagonal.
        row_sums = 1.0 + np.bincount(first, joint, n_rows) + np.bincount(second, joint, n_rows)
        shift = row_sums.sum() / n_rows**2
        centred = joint - (row_sums[first] + row_sums[second]) / n_rows + shift
        centred_diagonal = 1.0 - 2.0 * row_sums / n_rows + shift
        cross = self.target_trace + 2.0 * joint @ self.target_pairs
        norm = 2.0 * centred @ centred + centred_diagonal @ centred_diagonal
        if cross <= 0.0 or norm <= 0.0:
            return cross, norm, None
        # d/dK_ab of log cross - log(norm) / 2, for a pair's two symmetric entries, times
        # K_ab: d log K_ab / d log gamma_j is -gamma_j u_abj, or k_abj - 1 (Cauchy).
        pair_gradient = (2.0 * self.target_pairs / cross - 2.0 * centred / norm) * joint
        gradient = np.empty_like(gammas)
        gradient[~cauchy] = -gammas[~cauchy] * (pair_gradient @ self.exponential_distances)
        if self.cauchy_distances.size:
            gradient[cauchy] = pair_gradient @ (cauchy_factors - 1.0)
        return cross, norm, gradient

    def _compiled(self, gammas):
        n_rows, cauchy = self.n_rows, self.cauchy
        exponential_gammas, cauchy_gammas = gammas[~cauchy], gammas[cauchy]
        chunk_row_sums = np.zeros((self.n_chunks, n_rows))
        self._sweep(
            _joint_numba,
            self.exponential_distances,
            exponential_gammas,
            self.cauchy_distances,
            cauchy_gammas,
            self.fixed,
            self.first,
            self.second,
            self.joint,
            chunk_row_sums,
        )
        row_sums = 1.0 + chunk_row_sums.sum(axis=0)
        shift = row_sums.sum() / n_rows**2
        chunk_sums = np.zeros((self.n_chunks, 2))
        self._sweep(
            _centred_numba,
            self.joint,
            self.target_pairs,
            row_sums / n_rows - 0.5 * shift,
            self.first,
            self.second,
            self.centred,
            chunk_sums,
        )
        pair_cross, pair_norm = chunk_sums.sum(axis=0)
        centred_diagonal = 1.0 - 2.0 * row_sums / n_rows + shift
        cross = self.target_trace + 2.0 * pair_cross
        norm = 2.0 * pair_norm + centred_diagonal @ centred_diagonal
        if cross <= 0.0 or norm <= 0.0:
            return cross, norm, None
        exponential_sums = np.zeros((self.n_chunks, exponential_gammas.size))
        cauchy_sums = np.zeros((self.n_chunks, cauchy_gammas.size))
        self._sweep(
            _gradient_numba,
            self.exponential_distances,
            self.cauchy_distances,
            cauchy_gammas,
            self.joint,
            self.centred,
            self.target_pairs,
            2.0 / cross,
            2.0 / norm,
            exponential_sums,
            cauchy_sums,
        )
        gradient = np.empty_like(gammas)
        gradient[~cauchy] = -exponential_gammas * exponential_sums.sum(axis=0)
        gradient[cauchy] = cauchy_sums.sum(axis=0)
        return cross, norm, gradient

    def _sweep(self, kernel, *arguments):
        """``kernel`` over every chunk of pairs, in this thread or shared by the pool's."""
        if self._executor is None:
            kernel(*arguments, _CHUNK_PAIRS, 0, self.n_chunks)
            return
        tasks = [
            self._executor.submit(kernel, *arguments, _CHUNK_PAIRS, low, high)
            for low, high in self._ranges
        ]
        for task in tasks:
            task.result()


# The compiled sweeps: each covers chunks [first_chunk, last_chunk) of ``chunk_pairs`` pairs
# and writes each chunk's partial sums to its own row, so the caller adds them in order.


def _joint_kernel(
    exponential_distances,
    exponential_gammas,
    cauchy_distances,
    cauchy_gammas,
    fixed,
    first,
    second,
    joint,
    chunk_row_sums,
    chunk_pairs,
    first_chunk,
    last_chunk,
):
    """Each pair's joint kernel value, and each chunk's sums of them by row."""
    n_pairs = joint.shape[0]
    for chunk in range(first_chunk, last_chunk):
        for p in range(chunk * chunk_pairs, min((chunk + 1) * chunk_pairs, n_pairs)):
            exponent = 0.0
            for j in range(exponential_gammas.shape[0]):
                exponent += exponential_distances[p, j] * exponential_gammas[j]
            value = fixed[p] * np.exp(-exponent)
            for j in range(cauchy_gammas.shape[0]):
                value /= 1.0 + cauchy_distances[p, j] * cauchy_gammas[j]
            joint[p] = value
            chunk_row_sums[chunk, first[p]] += value
            chunk_row_sums[chunk, second[p]] += value


def _centred_kernel(
    joint,
    target_pairs,
    row_terms,
    first,
    second,
    centred,
    chunk_sums,
    chunk_pairs,
    first_chunk,
    last_chunk,
):
    """Each pair's centred kernel value (``row_terms``: row sum / n - shift / 2), and each
    chunk's sums of joint * target and of centred^2."""
    n_pairs = joint.shape[0]
    for chunk in range(first_chunk, last_chunk):
        cross = 0.0
        norm = 0.0
        for p in range(chunk * chunk_pairs, min((chunk + 1) * chunk_pairs, n_pairs)):
            value = joint[p] - (row_terms[first[p]] + row_terms[second[p]])
            centred[p] = value
            cross += joint[p] * target_pairs[p]
            norm += value * value
        chunk_sums[chunk, 0] = cross
        chunk_sums[chunk, 1] = norm


def _gradient_kernel(
    exponential_distances,
    cauchy_distances,
    cauchy_gammas,
    joint,
    centred,
    target_pairs,
    cross_weight,
    norm_weight,
    exponential_sums,
    cauchy_sums,
    chunk_pairs,
    first_chunk,
    last_chunk,
):
    """Each chunk's sums over its pairs of the loss's pair gradient times d log K / d log
    gamma (without the factor -gamma of the exponential kernels)."""
    n_pairs = joint.shape[0]
    for chunk in range(first_chunk, last_chunk):
        exponential = np.zeros(exponential_sums.shape[1])
        cauchy = np.zeros(cauchy_sums.shape[1])
        for p in range(chunk * chunk_pairs, min((chunk + 1) * chunk_pairs, n_pairs)):
            weight = (cross_weight * target_pairs[p] - norm_weight * centred[p]) * joint[p]
            for j in range(exponential.shape[0]):
                exponential[j] += weight * exponential_distances[p, j]
            for j in range(cauchy.shape[0]):
                factor = 1.0 / (1.0 + cauchy_distances[p, j] * cauchy_gammas[j])
                cauchy[j] += weight * (factor - 1.0)
        exponential_sums[chunk] = exponential
        cauchy_sums[chunk] = cauchy


if _integrals.NUMBA:
    _joint_numba = _integrals.compile_kernel(_joint_kernel)
    _centred_numba = _integrals.compile_kernel(_centred_kernel)
    _gradient_numba = _integrals.compile_kernel(_gradient_kernel)
