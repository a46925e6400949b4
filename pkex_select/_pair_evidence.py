"""Evidence that two features act on y together: the ANOVA game's dividend of a pair; and
that one feature's kernel tells about a target, scored the same way (``dependence_scores``).
The model game's ridge scores its residuals with both (``_ridge_game._finer_terms``,
``_ridge_game._restored_pair``).

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

from ._features import add_row_sums, centre_rows
from ._plan import pairs_of_rows

__all__ = ["dependence_scores", "pair_dividends", "pair_scores"]


def pair_dividends(factors, gram, n_first):
    """The ANOVA game's dividend (at ``w = 1``) of every pair of one of the first ``n_first``
    features with any feature, and its spread where the first is independent of the rest.

    Parameters
    ----------
    factors : DataFactors
        The features' kernel factors at one scale (``_features.DataFactors``), those of the
        ANOVA game.
    gram : ndarray of shape (n_samples, n_samples)
        The target's Gram matrix.
    n_first : int

    Returns
    -------
    dividends, spreads : ndarray of shape (n_first, n_features)
        Entry (i, j): the unbiased HSIC of ``k~_i k~_j`` with the target,
        ``sum_{a != b} k~_i k~_j l~ / (n (n - 3))``, and ``sqrt(2 sum_{a != b} (k~_i k~_j
        l~)^2) / (n (n - 3))``; 0 for a constant feature. Entry (i, i) pairs a feature with
        itself.
    """
    centred, target = _u_centred(factors, gram)
    weighted = centred[:, :n_first] * target
    scale = 2.0 / (factors.n_samples * (factors.n_samples - 3))
    dividends = scale * (weighted.T @ centred)
    spreads = scale * np.sqrt(np.square(weighted).T @ np.square(centred))
    return dividends, spreads


def pair_scores(factors, gram, n_first):
    """Each pair's score: its dividend over its spread (:func:`pair_dividends`, whose
    parameters these are), 0 where the spread is 0 (a constant feature)."""
    dividends, spreads = pair_dividends(factors, gram, n_first)
    return np.divide(dividends, spreads, out=np.zeros_like(dividends), where=spreads > 0)


def dependence_scores(factors, gram):
    """Each feature's U-centred HSIC with the target over its spread where the two are
    independent, as a pair's score is its dividend over its spread:

        sum_{a != b} k~ l~ / sqrt(2 sum_{a != b} (k~ l~)^2).

    Parameters
    ----------
    factors : DataFactors
        The features' kernel factors at one scale.
    gram : ndarray of shape (n_samples, n_samples)
        The target's Gram matrix.

    Returns
    -------
    ndarray of shape (n_features,)
        0 for a constant feature.
    """
    centred, target = _u_centred(factors, gram)
    weighted = centred * target
    totals = weighted.sum(axis=0)
    # Every pair of rows once: the sums over a != b are twice these.
    spreads = np.sqrt(np.einsum("pf,pf->f", weighted, weighted))
    return np.divide(totals, spreads, out=np.zeros_like(totals), where=spreads > 0)


def _u_centred(factors, gram):
    """The U-centred factors (n_pairs, n_features) and target Gram matrix (n_pairs, 1) of
    every pair of rows once, in the order of :func:`~pkex_select._plan.pairs_of_rows`;
    a constant feature's are 0."""
    n_samples = factors.n_samples
    if n_samples < 4:
        raise ValueError(f"U-centring needs at least 4 samples; got {n_samples}.")
    # The features' factors and, last, the target's Gram matrix, U-centred as the ANOVA
    # game centres its factors (CentredFactors), here over these rows and at weight 1.
    rows = (0, n_samples)
    pairs = pairs_of_rows(rows, n_samples)
    entries = np.column_stack([factors(pairs)[0], gram[pairs.a, pairs.b]])
    sums = np.zeros((n_samples, entries.shape[1]))
    add_row_sums(entries, rows, n_samples, sums)
    constant = np.append(factors.constant, False)
    row_terms = sums / (n_samples - 2)
    total_terms = sums.sum(axis=0) / ((n_samples - 1) * (n_samples - 2))
    centre_rows(entries, rows, n_samples, row_terms, total_terms, 1.0, constant)
    entries -= 1.0  # 1 + k~ -> k~
    return entries[:, :-1], entries[:, -1:]
