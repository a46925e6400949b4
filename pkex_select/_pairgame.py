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

import numpy as np
from joblib import Parallel, delayed
from sklearn.utils import check_random_state

from ._engine import weighted_contributions
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


def solve(plan, factors, weights, *, n_jobs=None, progress=None, backend="auto"):
    """Shapley values of the statistic for every order of the labels, at every scale.

    Parameters
    ----------
    plan : AllPairs or SampleBlocks
    factors : callable Pairs -> list of Z of shape (n_pairs, n_features), one per scale
    weights : callable Pairs -> weights of shape (n_orders, n_pairs)
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
    """

    def task(block):
        pairs = plan.pairs(block)
        block_weights = weights(pairs)
        scales = factors(pairs)
        values, statistics, moments = [], [], np.zeros((len(scales), 3))
        for k, Z in enumerate(scales):
            joint = np.prod(Z, axis=1)
            moments[k] = joint.size, joint.sum(), joint @ joint
            statistics.append(block_weights @ joint)
            values.append(weighted_contributions(Z, block_weights, backend=backend))
        return np.array(values), np.array(statistics), moments

    n_jobs = n_jobs if len(plan.blocks) > 1 else 1
    results = Parallel(n_jobs=n_jobs, prefer="threads", return_as="generator")(
        delayed(task)(block) for block in plan.blocks
    )
    values = statistics = moments = 0.0
    for done, (block_values, block_statistics, block_moments) in enumerate(results, start=1):
        values = values + block_values
        statistics = statistics + block_statistics
        moments = moments + block_moments
        if progress is not None:
            progress(done, len(plan.blocks))
    return values, statistics, moments


def kernel_spread(moments):
    """Standard deviation of the joint kernel over the pairs, from :func:`solve`'s moments."""
    count, total, squares = moments.T
    mean = total / count
    return np.sqrt(np.maximum(squares / count - mean**2, 0.0))


def attribute(statistic, factors, target, n_samples, *, n_permutations=0, random_state=None,
              n_jobs=None, progress=None):
    """Shapley values of ``statistic`` for the observed target and ``n_permutations`` others.

    The one path from every entry point to the engine: plan the pairs, then solve. The
    random state draws the plan (block estimators) first, then the permutations, so that a
    function and an estimator given the same seed attribute the same statistic. With
    several bandwidth scales the statistic is the sum over scales of the statistic divided
    by the spread of its joint kernel over the pairs (:func:`kernel_spread`), so that no
    scale dominates the others; a scale whose kernel has no spread adds nothing.

    Returns
    -------
    values : ndarray of shape (n_permutations + 1, n_features)
        Row 0 for the observed order of the target.
    scale_statistics : ndarray of shape (n_permutations + 1, n_scales)
        Each scale's statistic, normalised as in the sum, without the part that is the same
        in every order (see :func:`solve`): what tests of the statistic compare.
    """
    statistic.check(n_samples)
    rng = check_random_state(random_state)
    pair_bytes = 8 * max(factors.n_features, n_permutations + 1)
    plan = statistic.plan(n_samples, rng, pair_bytes, n_jobs)
    orders = permutation_orders(n_samples, n_permutations, rng)
    values, statistics, moments = solve(plan, factors, statistic.weights(target, orders, plan),
                                        n_jobs=n_jobs, progress=progress)
    if len(values) == 1:
        return values[0], statistics.T
    spread = kernel_spread(moments)
    scale_weights = np.divide(1.0, spread, out=np.zeros_like(spread), where=spread > 0)
    return np.tensordot(scale_weights, values, axes=1), (statistics * scale_weights[:, None]).T


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
