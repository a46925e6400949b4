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
# The compiled sweeps' chunks: whole rows a with about this many pairs (a, b > a) in all.
# Their partial sums are added in chunk order, whatever the number of threads.
_CHUNK_PAIRS = 4096
# Below this many pair-features an evaluation is too short to share: two threads took 0.56
# ms against one's 0.60 ms at 1.2 x 10^6 (350 rows, 20 features), 0.78 against 1.21 at
# 3.6 x 10^6 (600 rows), and longer below.
_MIN_PARALLEL_PAIR_FEATURES = 2_000_000
# L-BFGS-B stops once an iteration lowers the loss by less than this, relative: the loss
# is flat near its minimum, and scipy's default (2.2e-9) ran friedman1 (n = 500 and 3000,
# d = 20) to the cap of 100 iterations, where 1e-7 stops after about 50 with values within
# 1% of the largest.
_FTOL = 1e-7
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
    fixed = np.ones(first.size)
    for j in np.flatnonzero(varying & is_delta & ~align_categories):
        fixed *= factor_of_difference(data[first, j] - data[second, j], "delta")
    objective = PenalisedLogAlignment(
        data[:, widths],
        [kernels[j] for j in widths],
        fixed,
        centred_target[first, second],
        np.trace(centred_target),
    )
    median_gammas = np.log(np.asarray(gammas, dtype=np.float64)[widths])
    # Every factor starts at a mean exponent of 2 / d over the pairs, so the joint kernel is
    # e^-2 on a typical pair: wide enough that what each feature adds to the alignment shows.
    start = np.log(2.0 / (widths.size * objective.mean_distances))
    with objective.workers(n_jobs):
        result = minimize(
            objective,
            start,
            jac=True,
            method="L-BFGS-B",
            bounds=list(zip(start - _WIDER, start + _NARROWER)),
            options={"maxiter": 100, "ftol": _FTOL},
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
    columns : ndarray of shape (n_rows, n_aligned)
        The aligned columns' values on the rows.
    kernels : sequence of str
        Each aligned column's kernel. Its factor is exp(-gamma u) with u = (a - b)^2 ("rbf"),
        |a - b| ("laplacian") or [a != b] ("delta"), or 1 / (1 + gamma u) with u = (a - b)^2
        ("cauchy").
    fixed : ndarray of shape (n_pairs,)
        The product of the factors that are not aligned (delta columns), pair by pair in the
        order of ``np.triu_indices(n_rows, 1)``.
    target_pairs : ndarray of shape (n_pairs,)
        The centred target Gram matrix on the pairs.
    target_trace : float
        Its trace.
    compiled : bool, optional
        The compiled sweeps (numba) or their NumPy twin; by default the compiled ones where
        numba is installed. The compiled sweeps compute each pair's u from the two rows'
        values as they go, so an evaluation reads no (n_pairs, n_aligned) array (29 MB at
        600 rows and 20 features, read twice by the NumPy twin), and add the partial sums of
        fixed chunks of rows in their order, so its values are the same on any number of
        threads. The two agree to rounding (tested within 1e-12).
    """

    def __init__(self, columns, kernels, fixed, target_pairs, target_trace, compiled=None):
        self.compiled = _integrals.NUMBA if compiled is None else compiled
        n_rows = columns.shape[0]
        first, second = np.triu_indices(n_rows, k=1)

        def distances(j, kernel):  # u of column j on every pair
            if kernel == "delta":
                return (columns[first, j] != columns[second, j]).astype(np.float64)
            return kernel_distances(columns[first, j] - columns[second, j], kernel)

        # One column at a time for the compiled sweeps, which need only their means.
        pair_distances = (distances(j, kernel) for j, kernel in enumerate(kernels))
        if not self.compiled:
            pair_distances = list(pair_distances)
        self.mean_distances = np.array([u.mean() for u in pair_distances])
        self.cauchy = np.array([kernel == "cauchy" for kernel in kernels], dtype=bool)
        self.fixed, self.target_pairs, self.target_trace = fixed, target_pairs, target_trace
        self.n_rows = n_rows
        self._executor = None
        if not self.compiled:
            self.first, self.second = first, second
            matrix = np.column_stack(pair_distances)
            self.exponential_distances = np.asfortranarray(matrix[:, ~self.cauchy])
            self.cauchy_distances = matrix[:, self.cauchy]
            return
        # The sweeps take the columns grouped by how u is computed, the Cauchy ones last.
        kind_of = {"rbf": 0, "laplacian": 1, "delta": 2, "cauchy": 3}
        kinds = np.array([kind_of[kernel] for kernel in kernels])
        self.order = np.argsort(kinds, kind="stable")
        self.columns = np.ascontiguousarray(columns[:, self.order].T, dtype=np.float64)
        self.bounds = np.searchsorted(kinds[self.order], np.arange(1, 4))
        # Chunks of whole rows a (with their pairs a < b) of about _CHUNK_PAIRS pairs each.
        pairs_before = np.r_[0, np.cumsum(np.arange(n_rows - 1, -1, -1))]
        targets = np.arange(0, first.size, _CHUNK_PAIRS)
        self.chunk_starts = np.unique(np.r_[np.searchsorted(pairs_before, targets), n_rows])
        self.n_chunks = self.chunk_starts.size - 1
        self.joint = np.empty(first.size)
        self.centred = np.empty(first.size)
        # The fixed factors times the Cauchy ones, pair by pair (the fixed ones alone without
        # Cauchy columns).
        self.scales = np.empty(first.size) if self.bounds[2] < len(kernels) else fixed

    @contextlib.contextmanager
    def workers(self, n_jobs):
        """Share the compiled sweeps among ``n_jobs`` threads (where the pairs are many
        enough) while the block runs."""
        work = self.fixed.size * self.mean_distances.size
        if not self.compiled or work < _MIN_PARALLEL_PAIR_FEATURES:
            yield self
            return
        threads = min(effective_n_jobs(n_jobs), os.cpu_count() or 1, self.n_chunks)
        if threads < 2:
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
        n_rows, order = self.n_rows, self.order
        ordered_gammas = np.ascontiguousarray(gammas[order])
        chunk_row_sums = np.zeros((self.n_chunks, n_rows))
        self._sweep(
            _joint_sweep, ordered_gammas, self.fixed, self.joint, self.scales, chunk_row_sums
        )
        row_sums = 1.0 + chunk_row_sums.sum(axis=0)
        shift = row_sums.sum() / n_rows**2
        chunk_sums = np.zeros((self.n_chunks, 2))
        row_terms = row_sums / n_rows - 0.5 * shift
        self._sweep(
            _centred_numba, self.joint, self.target_pairs, row_terms, self.centred, chunk_sums
        )
        pair_cross, pair_norm = chunk_sums.sum(axis=0)
        centred_diagonal = 1.0 - 2.0 * row_sums / n_rows + shift
        cross = self.target_trace + 2.0 * pair_cross
        norm = 2.0 * pair_norm + centred_diagonal @ centred_diagonal
        if cross <= 0.0 or norm <= 0.0:
            return cross, norm, None
        chunk_gradients = np.zeros((self.n_chunks, gammas.size))
        weights = np.array([2.0 / cross, 2.0 / norm])
        self._sweep(
            _gradient_numba,
            ordered_gammas,
            self.joint,
            self.centred,
            self.target_pairs,
            weights,
            chunk_gradients,
        )
        # d log k / d log gamma is -gamma u for exp(-gamma u): the sweep leaves out -gamma.
        ordered = chunk_gradients.sum(axis=0)
        exponential = slice(0, self.bounds[2])
        ordered[exponential] *= -ordered_gammas[exponential]
        gradient = np.empty_like(gammas)
        gradient[order] = ordered
        return cross, norm, gradient

    def _sweep(self, kernel, *arguments):
        """``kernel`` over every chunk of rows, in this thread or shared by the pool's."""
        arguments = (self.columns, self.bounds, self.chunk_starts, *arguments)
        if self._executor is None:
            kernel(*arguments, 0, self.n_chunks)
            return
        tasks = [self._executor.submit(kernel, *arguments, low, high) for low, high in self._ranges]
        for task in tasks:
            task.result()


# The compiled sweeps. Each covers the chunks [first_chunk, last_chunk) of rows a
# (chunk_starts[c] <= a < chunk_starts[c + 1]) with their pairs (a, b > a), numbered as
# np.triu_indices numbers them, and writes each chunk's partial sums to its own row, so the
# caller adds them in chunk order. ``columns`` (n_columns, n_rows) holds the rows' values,
# the columns grouped by kind: "rbf" before bounds[0], "laplacian" before bounds[1], "delta"
# before bounds[2], "cauchy" after. Row a's pairs are swept as views from 0 along a
# column's values b > a, which the compiler vectorises (2x faster than indexing by b).


def _joint_sweep(
    columns,
    bounds,
    chunk_starts,
    gammas,
    fixed,
    joint,
    scales,
    chunk_row_sums,
    first_chunk,
    last_chunk,
):
    """Each pair's joint kernel value, and each chunk's sums of them by row: the exponents
    compiled, their exponential by NumPy, whose SIMD loop is 5x faster than the compiled
    scalar one (numba has no vector exp without Intel's SVML), then the row sums compiled.
    Every step releases the GIL."""
    n_rows = columns.shape[1]
    first_row, last_row = chunk_starts[first_chunk], chunk_starts[last_chunk]
    pairs = slice(
        first_row * (2 * n_rows - first_row - 1) // 2, last_row * (2 * n_rows - last_row - 1) // 2
    )
    _exponents_numba(
        columns, bounds, chunk_starts, gammas, fixed, joint, scales, first_chunk, last_chunk
    )
    np.exp(joint[pairs], out=joint[pairs])
    _row_sums_numba(chunk_starts, joint, scales, chunk_row_sums, first_chunk, last_chunk)


def _exponents_kernel(
    columns, bounds, chunk_starts, gammas, fixed, exponents, scales, first_chunk, last_chunk
):
    """Each pair's -sum_j gamma_j u_j over the exponential factors, and, where there are
    Cauchy columns, its fixed factor times its Cauchy factors (``scales``)."""
    n_columns, n_rows = columns.shape
    for a in range(chunk_starts[first_chunk], chunk_starts[last_chunk]):
        first_pair, n_pairs = a * (2 * n_rows - a - 1) // 2, n_rows - a - 1
        sums = exponents[first_pair : first_pair + n_pairs]
        sums[:] = 0.0
        for j in range(bounds[0]):
            value, gamma, others = columns[j, a], gammas[j], columns[j, a + 1 :]
            for k in range(n_pairs):
                difference = value - others[k]
                sums[k] -= gamma * (difference * difference)
        for j in range(bounds[0], bounds[1]):
            value, gamma, others = columns[j, a], gammas[j], columns[j, a + 1 :]
            for k in range(n_pairs):
                sums[k] -= gamma * abs(value - others[k])
        for j in range(bounds[1], bounds[2]):
            value, gamma, others = columns[j, a], gammas[j], columns[j, a + 1 :]
            for k in range(n_pairs):
                if others[k] != value:
                    sums[k] -= gamma
        if bounds[2] == n_columns:
            continue
        products = scales[first_pair : first_pair + n_pairs]
        products[:] = fixed[first_pair : first_pair + n_pairs]
        for j in range(bounds[2], n_columns):
            value, gamma, others = columns[j, a], gammas[j], columns[j, a + 1 :]
            for k in range(n_pairs):
                difference = value - others[k]
                products[k] /= 1.0 + gamma * (difference * difference)


def _row_sums_kernel(chunk_starts, joint, scales, chunk_row_sums, first_chunk, last_chunk):
    """``joint`` times ``scales``, pair by pair, and each chunk's sums of it by row."""
    n_rows = chunk_row_sums.shape[1]
    for chunk in range(first_chunk, last_chunk):
        row_sums = chunk_row_sums[chunk]
        for a in range(chunk_starts[chunk], chunk_starts[chunk + 1]):
            first_pair, n_pairs = a * (2 * n_rows - a - 1) // 2, n_rows - a - 1
            factors = joint[first_pair : first_pair + n_pairs]
            pair_scales = scales[first_pair : first_pair + n_pairs]
            later_rows = row_sums[a + 1 :]
            total = 0.0
            for k in range(n_pairs):
                factor = pair_scales[k] * factors[k]
                factors[k] = factor
                total += factor
                later_rows[k] += factor
            row_sums[a] += total


def _centred_kernel(
    columns,
    bounds,
    chunk_starts,
    joint,
    target_pairs,
    row_terms,
    centred,
    chunk_sums,
    first_chunk,
    last_chunk,
):
    """Each pair's centred kernel value (``row_terms``: row sum / n - shift / 2), and each
    chunk's sums of joint * target and of centred^2."""
    n_rows = columns.shape[1]
    for chunk in range(first_chunk, last_chunk):
        cross = 0.0
        norm = 0.0
        for a in range(chunk_starts[chunk], chunk_starts[chunk + 1]):
            first_pair, n_pairs = a * (2 * n_rows - a - 1) // 2, n_rows - a - 1
            pairs = slice(first_pair, first_pair + n_pairs)
            factors, targets, values = joint[pairs], target_pairs[pairs], centred[pairs]
            later_terms, term = row_terms[a + 1 :], row_terms[a]
            for k in range(n_pairs):
                value = factors[k] - (term + later_terms[k])
                values[k] = value
                cross += factors[k] * targets[k]
                norm += value * value
        chunk_sums[chunk, 0] = cross
        chunk_sums[chunk, 1] = norm


def _gradient_kernel(
    columns,
    bounds,
    chunk_starts,
    gammas,
    joint,
    centred,
    target_pairs,
    weights,
    chunk_gradients,
    first_chunk,
    last_chunk,
):
    """Each chunk's sums over its pairs of the loss's pair gradient (``weights``: 2 / cross
    and 2 / norm) times u (exponential factors) or times k - 1 (Cauchy factors)."""
    n_columns, n_rows = columns.shape
    buffer = np.empty(n_rows)
    for chunk in range(first_chunk, last_chunk):
        sums = np.zeros(n_columns)
        for a in range(chunk_starts[chunk], chunk_starts[chunk + 1]):
            first_pair, n_pairs = a * (2 * n_rows - a - 1) // 2, n_rows - a - 1
            pairs = slice(first_pair, first_pair + n_pairs)
            factors, targets, values = joint[pairs], target_pairs[pairs], centred[pairs]
            pair_gradients = buffer[:n_pairs]
            for k in range(n_pairs):
                pair_gradients[k] = (weights[0] * targets[k] - weights[1] * values[k]) * factors[k]
            for j in range(n_columns):
                value, gamma, others = columns[j, a], gammas[j], columns[j, a + 1 :]
                total = 0.0
                for k in range(n_pairs):
                    difference = value - others[k]
                    if j < bounds[0]:
                        total += pair_gradients[k] * (difference * difference)
                    elif j < bounds[1]:
                        total += pair_gradients[k] * abs(difference)
                    elif j < bounds[2]:
                        if difference != 0.0:
                            total += pair_gradients[k]
                    else:
                        factor = 1.0 / (1.0 + gamma * (difference * difference))
                        total += pair_gradients[k] * (factor - 1.0)
                sums[j] += total
        chunk_gradients[chunk] = sums


if _integrals.NUMBA:
    _exponents_numba = _integrals.compile_kernel(_exponents_kernel)
    _row_sums_numba = _integrals.compile_kernel(_row_sums_kernel)
    _centred_numba = _integrals.compile_kernel(_centred_kernel)
    _gradient_numba = _integrals.compile_kernel(_gradient_kernel)
