"""Streaming evaluation of Gram-statistic pair games (HSIC, MMD) and their permutations.

A kernel statistic that is linear in the Gram matrix, ``T(K) = sum_{a,b} W_ab K_ab``, is a
pair game once ``K = prod_{j in S} K_j``. Diagonal pairs never contribute (every factor is 1
there) and W is symmetric, so the game runs over the pairs a < b with weight 2 W_ab. Every
entry point takes one path: validate, then :func:`attribute`: the statistic plans its pairs
(_plan.py), each block's pairs are built once, their kernel factors (from raw data or from
given Gram matrices) and their weights in every order of the labels (_statistics.py) go to
the engine, and the per-block values are summed. Memory stays bounded, and a permutation
costs one matrix-vector product per block.
"""

from typing import NamedTuple

import numpy as np
from joblib import Parallel, delayed
from sklearn.utils import check_random_state

from ._engine import DEFAULT_TOL, weighted_contributions
from ._interactions import assemble, block_interactions
from .kernels import factor_of_difference


class DataFactors:
    """Kernel factors ``k_j(X[a, j], X[b, j])`` of pairs, from (standardised) numeric data.

    Categorical columns hold integer codes for the delta kernel. ``gammas`` holds one
    array of per-feature parameters per bandwidth scale; a call returns the factors of
    every scale, computed from one set of differences.
    """

    def __init__(self, X, kernels, gammas):
        self.X, self.gammas = X, [np.asarray(g) for g in gammas]
        self.n_features = X.shape[1]
        # The columns of each kernel, found once rather than for every block.
        kernels = np.asarray(kernels)
        self.columns = {kernel: np.flatnonzero(kernels == kernel) for kernel in set(kernels)}

    def _differences(self, pairs):
        X = self.X
        if pairs.rows is None:
            Z = X[pairs.a]
            Z -= X[pairs.b]
            return Z
        # All pairs of a row range: contiguous slices of X, no gather.
        Z = np.empty((pairs.a.size, self.n_features))
        offset = 0
        for a in range(*pairs.rows):
            count = X.shape[0] - 1 - a
            np.subtract(X[a + 1 :], X[a], out=Z[offset : offset + count])
            offset += count
        return Z

    def __call__(self, pairs):
        differences = self._differences(pairs)
        return [self._factors(differences.copy() if k < len(self.gammas) - 1 else differences,
                              gamma) for k, gamma in enumerate(self.gammas)]

    def _factors(self, Z, gamma):
        if len(self.columns) == 1:
            return factor_of_difference(Z, next(iter(self.columns)), gamma)
        for kernel, cols in self.columns.items():
            Z[:, cols] = factor_of_difference(Z[:, cols], kernel, gamma[cols])
        return Z


class GramFactors:
    """Kernel factors of pairs read from per-feature Gram matrices ``K`` (d, n, n)."""

    def __init__(self, K):
        self.K = K
        self.n_features = K.shape[0]

    def __call__(self, pairs):
        return [self.K[:, pairs.a, pairs.b].T]


class RemovedFactors:
    """Kernel means that replace removed factors (the observational value function).

    ``means[s, k, c, j]`` is the mean of feature j's Gram matrix (at scale s) over cell c in
    order k: its pairs counted as in the full matrix (twice in a diagonal cell) and its
    diagonal entries, which are 1. Diagonal entries are pairs too now: a removed feature
    changes them from 1 to the cell's mean, so each cell's diagonal is one more pair with
    factors 1 and the cell's diagonal weight.
    """

    def __init__(self, cells, means):
        self.cells, self.means = cells, means

    @classmethod
    def measure(cls, plan, factors, cells, n_jobs=None):
        """One pass over the plan's pairs to sum each feature's factors per cell."""
        n_cells = cells.within.size

        def task(block):
            pairs = plan.pairs(block)
            pair_cells = cells.pair_cells(pairs)
            # One-hot cell membership of each pair, per order: sums are matrix products.
            members = [np.eye(n_cells)[row].T for row in pair_cells]
            counts = np.stack([member.sum(axis=1) for member in members])
            sums = np.stack([np.stack([member @ Z for member in members])
                             for Z in factors(pairs)])
            return counts, sums

        counts = sums = 0.0
        for block_counts, block_sums in Parallel(n_jobs=n_jobs, prefer="threads")(
            delayed(task)(block) for block in plan.blocks
        ):
            counts, sums = counts + block_counts, sums + block_sums
        multiplicity = np.where(cells.within, 2.0, 1.0)
        entries = cells.diagonal_counts + multiplicity * counts
        total = cells.diagonal_counts[..., None] + multiplicity[:, None] * sums
        # An empty cell has no pairs; its mean is never used.
        means = np.divide(total, entries[..., None], out=np.ones_like(total),
                          where=entries[..., None] > 0)
        return cls(cells, means)

    def baseline(self, scale, order, pair_cells):
        """Removed factors of a block's pairs in one order (n_pairs, n_features)."""
        row = order if len(pair_cells) > 1 else 0
        return self.means[scale, row][pair_cells[row]]

    @property
    def by_order(self):
        """Whether the cells (and so the baselines) change with the order of the labels."""
        return self.means.shape[1] > 1

    def diagonal_values(self, scale, n_orders):
        """Shapley values of the diagonal pairs: (n_orders, n_features)."""
        means, weights = self.means[scale], self.cells.diagonal_weights
        ones = np.ones(means.shape[1:])
        if not self.by_order:
            return weighted_contributions(ones, weights, baseline=means[0])
        return np.concatenate([
            weighted_contributions(ones, weights[k : k + 1], baseline=means[k])
            for k in range(n_orders)
        ])

    def diagonal_interactions(self, scale, index, tol):
        means = self.means[scale, 0]
        weights = self.cells.diagonal_weights[0][:, None]
        return block_interactions(np.ones(means.shape), means, weights, index, tol)


def solve(plan, factors, weights, *, removed=None, interaction_index=None, n_jobs=None,
          progress=None, backend="auto", tol=DEFAULT_TOL):
    """Shapley values of the statistic for every order of the labels, at every scale.

    Parameters
    ----------
    plan : AllPairs or SampleBlocks
    factors : callable Pairs -> list of Z of shape (n_pairs, n_features), one per scale
    weights : callable Pairs -> weights of shape (n_orders, n_pairs)
    removed : RemovedFactors or None
        The removed factors of the observational value function; 1 when None.
    interaction_index : str or None
        Also the pairwise interaction index of the observed order (see
        :func:`pkex_select.interaction_values`).
    progress : callable (done, total) or None
        Called after each block.

    Returns
    -------
    values : ndarray of shape (n_scales, n_orders, n_features)
    statistics : ndarray of shape (n_scales, n_orders)
        Per scale, ``sum_p w_p prod_j z_pj``: the statistic without its part from the
        diagonal pairs, which is the same in every order. The values add up to it plus that
        constant; but where the joint kernel is nearly the identity (d median-width factors)
        the sum of the values is the constant plus a signal below its rounding error, so
        tests compare these instead.
    kernel_moments : ndarray of shape (n_scales, 3)
        Per scale, the number of pairs and the sums of the joint kernel ``prod_j z_pj``
        and of its square over the pairs.
    interactions : tuple of ndarray or None
        Per scale, the pairwise sums (n_scales, d, d) and order-one values (n_scales, d) of
        the interaction index, before :func:`~pkex_select._interactions.assemble`.
    """
    def task(block):
        pairs = plan.pairs(block)
        block_weights = weights(pairs)
        scales = factors(pairs)
        pair_cells = None if removed is None else removed.cells.pair_cells(pairs)
        values, statistics, moments = [], [], np.zeros((len(scales), 3))
        pairwise, order_one = [], []
        for s, Z in enumerate(scales):
            joint = np.prod(Z, axis=1)
            moments[s] = joint.size, joint.sum(), joint @ joint
            statistics.append(block_weights @ joint)
            base = None if removed is None else removed.baseline(s, 0, pair_cells)
            if removed is not None and removed.by_order:
                # The removed factors change with the labels: one game per order.
                values.append(np.concatenate([
                    weighted_contributions(Z, block_weights[k : k + 1],
                                           baseline=removed.baseline(s, k, pair_cells),
                                           backend=backend)
                    for k in range(len(block_weights))
                ]))
            else:
                values.append(weighted_contributions(Z, block_weights, baseline=base,
                                                     backend=backend))
            if interaction_index is not None:
                block_pairwise, block_order_one = block_interactions(
                    Z, base, block_weights[0][:, None], interaction_index, tol)
                pairwise.append(block_pairwise[..., 0])
                order_one.append(block_order_one[:, 0])
        extra = (np.array(pairwise), np.array(order_one)) if interaction_index else None
        return np.array(values), np.array(statistics), moments, extra

    n_jobs = n_jobs if len(plan.blocks) > 1 else 1
    results = Parallel(n_jobs=n_jobs, prefer="threads", return_as="generator")(
        delayed(task)(block) for block in plan.blocks
    )
    values = statistics = moments = 0.0
    interactions = None
    for done, (block_values, block_statistics, block_moments, extra) in enumerate(
        results, start=1
    ):
        values = values + block_values
        statistics = statistics + block_statistics
        moments = moments + block_moments
        if extra is not None:
            interactions = extra if interactions is None else (
                interactions[0] + extra[0], interactions[1] + extra[1])
        if progress is not None:
            progress(done, len(plan.blocks))
    if removed is not None:
        values = values + np.array([removed.diagonal_values(s, values.shape[1])
                                    for s in range(values.shape[0])])
        if interaction_index is not None:
            diagonal = [removed.diagonal_interactions(s, interaction_index, tol)
                        for s in range(values.shape[0])]
            interactions = (interactions[0] + np.array([p[..., 0] for p, _ in diagonal]),
                            interactions[1] + np.array([o[:, 0] for _, o in diagonal]))
    return values, statistics, moments, interactions


def kernel_spread(moments):
    """Standard deviation of the joint kernel over the pairs, from :func:`solve`'s moments."""
    count, total, squares = moments.T
    mean = total / count
    return np.sqrt(np.maximum(squares / count - mean**2, 0.0))


class Attribution(NamedTuple):
    """What :func:`attribute` returns."""

    values: np.ndarray  # (n_orders, n_features), row 0 the observed order
    scale_values: np.ndarray  # (n_scales, n_orders, n_features), normalised as in the sum
    scale_statistics: np.ndarray  # (n_orders, n_scales), see solve()
    interaction_values: np.ndarray | None  # (n_features, n_features) or None


def attribute(statistic, factors, target, n_samples, *, n_permutations=0, random_state=None,
              n_jobs=None, progress=None, value_function="baseline", interactions=None):
    """Shapley values of ``statistic`` for the observed target and ``n_permutations`` others.

    The one path from every entry point to the engine: plan the pairs, then solve. The
    random state draws the plan (block estimators) first, then the permutations, so that a
    function and an estimator given the same seed attribute the same statistic. With
    several bandwidth scales the statistic is the sum over scales of the statistic divided
    by the spread of its joint kernel over the pairs (:func:`kernel_spread`), so that no
    scale dominates the others; a scale whose kernel has no spread adds nothing.

    ``value_function="observational"`` replaces a removed feature's Gram matrix by its mean
    over each of the statistic's cells (one pass over the pairs first). Where the cells
    depend on the labels (MMD), each permutation is a game of its own: the test costs one
    engine pass per permutation instead of one matrix product.

    Returns
    -------
    Attribution
        ``values`` (n_permutations + 1, n_features), row 0 for the observed order of the
        target, the sum over scales of ``scale_values``; ``scale_statistics``
        (n_permutations + 1, n_scales), each scale's statistic normalised as in the sum,
        without the part that is the same in every order (see :func:`solve`): what tests
        of the statistic compare; ``interaction_values``, the index ``interactions`` of the
        observed order's game when asked for.
    """
    statistic.check(n_samples)
    rng = check_random_state(random_state)
    pair_bytes = 8 * max(factors.n_features, n_permutations + 1)
    plan = statistic.plan(n_samples, rng, pair_bytes, n_jobs)
    orders = permutation_orders(n_samples, n_permutations, rng)
    removed = None
    if value_function == "observational":
        removed = RemovedFactors.measure(plan, factors, statistic.cells(target, orders, plan),
                                         n_jobs)
    values, statistics, moments, pair_values = solve(
        plan, factors, statistic.weights(target, orders, plan), removed=removed,
        interaction_index=interactions, n_jobs=n_jobs, progress=progress)
    if len(values) == 1:
        scale_weights = np.ones(1)
    else:
        spread = kernel_spread(moments)
        scale_weights = np.divide(1.0, spread, out=np.zeros_like(spread), where=spread > 0)
    interaction_matrix = None
    if interactions is not None:
        pairwise = np.tensordot(scale_weights, pair_values[0], axes=1)
        order_one = np.tensordot(scale_weights, pair_values[1], axes=1)
        interaction_matrix = assemble(pairwise[None, ..., None], order_one[None, :, None],
                                      interactions)[0, ..., 0]
    scale_values = values * scale_weights[:, None, None]
    return Attribution(scale_values.sum(axis=0), scale_values,
                       (statistics * scale_weights[:, None]).T, interaction_matrix)


def permutation_orders(n_samples, n_permutations, random_state):
    """The identity followed by ``n_permutations`` random permutations of the samples.

    32-bit indices: the orders are the largest array of a permutation test (n_samples by
    n_permutations + 1), and halving it matters at 10^5 samples and more.
    """
    index_type = np.int32 if n_samples < 2**31 else np.intp
    orders = np.empty((n_permutations + 1, n_samples), dtype=index_type)
    orders[0] = np.arange(n_samples)
    for k in range(1, n_permutations + 1):
        orders[k] = random_state.permutation(n_samples)
    return orders
