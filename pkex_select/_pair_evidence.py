"""Evidence that two features act on y together: the ANOVA game's dividend of a pair.

The ANOVA game's kernel ``prod_j (1 + w k~_j)`` (``_features.CentredFactors``) expands into one
term per set of features, so the game's Moebius coefficient (dividend) of a pair {i, j} is
``w^2`` times the U-centred HSIC of the product ``k~_i k~_j`` with the target,

    T_ij = sum over rows a != b of k~_i(a, b) k~_j(a, b) l~(a, b),

with ``k~`` and ``l~`` U-centred Gram matrices (Szekely and Rizzo). A pure interaction such as
``y = x_i x_j`` has no main effect, so the game gives i and j values of about ``w^2 T_ij / 2``
beside the main-effect noise of every feature, which ``w`` (small at many features) keeps
below it; ``T_ij`` itself stands far out.

Where feature i is independent of feature j and of y, every entry of ``k~_i`` has mean 0, and
``T_ij`` is a degenerate sum whose spread is about ``sqrt(2 sum (k~_i k~_j l~)^2)``
(the rows' pairs counted once each, the entries about uncorrelated): a feature's *score*
with another is their dividend over that spread. On the planted designs of
``benchmarks.selection.planted`` (squares at n = 200, 500 and 2000, even and blocks at 200;
10 to 15 data sets each, on up to 500 rows) about 5000 pairs with a feature y does not
depend on scored with a standard deviation of 1.0 to 1.1 and a longer right tail (0.999
quantile 5.2 to 5.9, largest 7.2); a planted pure interaction 6 to 30 at n = 200 and 13 to
37 at 500.
"""

import numpy as np
from scipy import sparse

from .kernels import factor_of_difference

__all__ = ["pair_dividends"]


def _u_centred(entries, first, second, n_samples):
    """U-centre in place symmetric matrices with zero diagonal, each row of ``entries``
    holding one on the pairs ``first < second`` (each pair once)."""
    n_pairs = first.size
    # Each pair's entry adds to the sums of both its rows: one sparse product for all rows
    # of ``entries`` (np.bincount row by row took 7 times as long).
    incidence = sparse.csr_matrix(
        (np.ones(2 * n_pairs), (np.tile(np.arange(n_pairs), 2), np.r_[first, second])),
        shape=(n_pairs, n_samples),
    )
    sums = (incidence.T @ entries.T).T / (n_samples - 2)
    # The total over the whole matrix is twice the entries' sum.
    totals = 2.0 * entries.sum(axis=1) / ((n_samples - 1) * (n_samples - 2))
    for row, row_sums, total in zip(entries, sums, totals):
        row -= row_sums[first]
        row -= row_sums[second]
        row += total
    return entries


def pair_dividends(data, kernels, gammas, gram, n_first):
    """The ANOVA game's dividend (at ``w = 1``) of every pair of one of the first ``n_first``
    features with any feature, and its spread where the first is independent of the rest.

    Parameters
    ----------
    data : ndarray of shape (n_samples, n_features)
    kernels : sequence of str
        Each feature's kernel factor (:data:`~pkex_select.kernels.KERNELS`).
    gammas : ndarray of shape (n_features,)
    gram : ndarray of shape (n_samples, n_samples)
        The target's Gram matrix.
    n_first : int

    Returns
    -------
    dividends, spreads : ndarray of shape (n_first, n_features)
        Entry (i, j): the unbiased HSIC of ``k~_i k~_j`` with the target,
        ``sum_{a != b} k~_i k~_j l~ / (n (n - 3))``, and ``sqrt(2 sum_{a != b} (k~_i k~_j
        l~)^2) / (n (n - 3))``. Entry (i, i) pairs a feature with itself.
    """
    n_samples = data.shape[0]
    if n_samples < 4:
        raise ValueError(f"U-centring needs at least 4 samples; got {n_samples}.")
    first, second = np.triu_indices(n_samples, 1)
    # The features' factors and, last, the target's Gram matrix on each pair of rows once:
    # every sum below is half the sum over a != b.
    columns = np.ascontiguousarray(data.T, dtype=np.float64)
    entries = np.empty((columns.shape[0] + 1, first.size))
    np.subtract(np.take(columns, first, axis=1), np.take(columns, second, axis=1), out=entries[:-1])
    for differences, kernel, gamma in zip(entries, kernels, gammas):
        if kernel == "delta":
            np.equal(differences, 0.0, out=differences)
        else:
            factor_of_difference(differences, kernel, gamma)
    entries[-1] = gram[first, second]
    _u_centred(entries, first, second, n_samples)
    centred, target = entries[:-1], entries[-1]
    weighted = centred[:n_first] * target
    scale = 2.0 / (n_samples * (n_samples - 3))
    dividends = scale * (weighted @ centred.T)
    spreads = scale * np.sqrt(np.square(weighted) @ np.square(centred).T)
    return dividends, spreads
