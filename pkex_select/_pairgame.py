"""Streaming evaluation of Gram-statistic pair games (HSIC, MMD) and their permutations.

A kernel statistic that is linear in the Gram matrix, ``T(K) = sum_{a,b} W_ab K_ab``, is a
pair game once ``K = prod_{j in S} K_j``. Diagonal pairs never contribute (every factor is 1
there) and W is symmetric, so the game runs over the pairs a < b with weight 2 W_ab. Here
the pairs are streamed in blocks: for each block the per-pair contributions C (engine) are
computed once and applied to the observed weights and to the weights of every permutation,
so memory stays bounded and a permutation costs one matrix-vector product per block.

A statistic is described by a ``pair_weights(block)`` callable (see _gram.py): the weights
2 W_ab of the block's pairs with the samples' labels or targets taken in each of several
orders (the observed one and permutations), an array of shape (n_orders, n_pairs).
"""

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs

from ._engine import _contributions
from .kernels import factor_of_difference

# Pairs per block: factors, contributions and permuted weights stay near 1 MiB each, small
# enough for the caches and below the allocator's mmap threshold (no page faults per block).
_BLOCK_BYTES = 2**20


def row_blocks(n_samples, n_features, n_orders, *, n_jobs=None):
    """Row ranges ``(start, stop)`` whose pairs a < b form the blocks of the full estimators.

    Blocks hold about ``_BLOCK_BYTES / (8 * max(n_features, n_orders))`` pairs (at least one
    row), and at least four blocks per worker when ``n_jobs`` asks for parallelism.
    """
    max_pairs = max(n_samples, _BLOCK_BYTES // (8 * max(n_features, n_orders, 1)))
    workers = effective_n_jobs(n_jobs)
    if workers > 1:
        total = n_samples * (n_samples - 1) // 2
        max_pairs = min(max_pairs, max(n_samples, total // (4 * workers) + 1))
    # Row a holds n - 1 - a pairs; cut the rows where the running count passes max_pairs.
    ends = np.cumsum(np.arange(n_samples - 1, 0, -1))
    blocks, start = [], 0
    while start < n_samples - 1:
        before = ends[start - 1] if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, before + max_pairs, side="right")))
        blocks.append((start, stop))
        start = stop
    return blocks


def row_block_pairs(n_samples):
    """The function mapping a row range to its pairs ``(a, b)``, a < b, in row order."""

    def pairs(block):
        rows = np.arange(*block)
        counts = n_samples - 1 - rows
        a = np.repeat(rows, counts)
        # b runs a + 1, ..., n - 1 within each row.
        offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        return a, a + 1 + offsets

    return pairs


def pair_factors(X, kernels, gamma, a, b):
    """Kernel factors ``k_j(X[a, j], X[b, j])`` of the pairs (a, b): (n_pairs, n_features).

    ``X`` is numeric (categorical columns hold integer codes for the delta kernel).
    """
    Z = X[a]
    Z -= X[b]
    return _factors_in_place(Z, kernels, gamma)


def row_block_factors(X, kernels, gamma, block):
    """:func:`pair_factors` of the pairs of a row range, from contiguous slices of X."""
    start, stop = block
    n_samples = X.shape[0]
    Z = np.empty(((stop - start) * (2 * n_samples - start - stop - 1) // 2, X.shape[1]))
    offset = 0
    for a in range(start, stop):
        count = n_samples - 1 - a
        np.subtract(X[a + 1 :], X[a], out=Z[offset : offset + count])
        offset += count
    return _factors_in_place(Z, kernels, gamma)


def _factors_in_place(Z, kernels, gamma):
    if len(set(kernels)) == 1:
        return factor_of_difference(Z, kernels[0], gamma)
    for kernel in set(kernels):
        cols = np.array([j for j, k in enumerate(kernels) if k == kernel])
        Z[:, cols] = factor_of_difference(Z[:, cols], kernel, gamma[cols])
    return Z


def solve(blocks, factors, pair_weights, *, n_jobs=None, progress=None):
    """Shapley values of the statistic for every order of the labels.

    Parameters
    ----------
    blocks : list
        Small descriptions of the blocks of pairs (row ranges, block members); the pairs
        are built inside each task, so only running blocks use memory.
    factors : callable block -> Z of shape (n_pairs, n_features)
    pair_weights : callable block -> weights of shape (n_orders, n_pairs)
        One row per order of the labels; row 0 is usually the observed order.
    progress : callable (done, total) or None
        Called after each block.

    Returns
    -------
    values : ndarray of shape (n_orders, n_features)
    """

    def task(block):
        return pair_weights(block) @ _contributions(factors(block), "auto")

    n_jobs = n_jobs if len(blocks) > 1 else 1
    results = Parallel(n_jobs=n_jobs, prefer="threads", return_as="generator")(
        delayed(task)(block) for block in blocks
    )
    total = 0.0
    for done, partial in enumerate(results, start=1):
        total = total + partial
        if progress is not None:
            progress(done, len(blocks))
    return total


def solve_gram_matrices(K, pair_weights, *, blocks=None, expand=None, n_jobs=None):
    """Shapley values of a statistic of the per-feature Gram matrices ``K`` (d, n, n).

    By default the game runs over all pairs a < b in row blocks; ``blocks`` and ``expand``
    (block -> pairs ``(a, b, ...)``) give other pair sets, such as the block estimator's.
    """
    n_features, n_samples = K.shape[0], K.shape[1]
    if blocks is None:
        blocks = row_blocks(n_samples, n_features, 1, n_jobs=n_jobs)
        expand = row_block_pairs(n_samples)

    def factors(block):
        a, b = expand(block)[:2]
        return K[:, a, b].T

    return solve(blocks, factors, lambda block: pair_weights(expand(block)), n_jobs=n_jobs)[0]


def permutation_orders(n_samples, n_permutations, random_state):
    """The identity followed by ``n_permutations`` random permutations of the samples."""
    orders = np.empty((n_permutations + 1, n_samples), dtype=np.intp)
    orders[0] = np.arange(n_samples)
    for k in range(1, n_permutations + 1):
        orders[k] = random_state.permutation(n_samples)
    return orders


def permutation_pvalues(values):
    """One-sided p-values (1 + #{perm >= observed}) / (1 + n_perm) per column."""
    observed, permuted = values[0], values[1:]
    return (1.0 + np.sum(permuted >= observed, axis=0)) / (1.0 + permuted.shape[0])
