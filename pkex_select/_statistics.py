"""The kernel statistics attributed here, each as its pair plan and its pair weights.

Every statistic is ``sum_{a != b} W_ab K_ab`` for the feature Gram matrix K (docs/design.md,
section 1), a pair game over the pairs a < b with weight ``2 W_ab``. A statistic says which
samples it needs (``check``), which pairs it sums over (``plan``) and, for a target (the
target Gram matrix of HSIC, the group codes of MMD) taken in several ``orders`` (index arrays
of shape (n_orders, n_samples): row 0 the identity, the others permutations) and its plan, the
function
from a block's :class:`~pkex_select._plan.Pairs` to their weights in every order, shape
(n_orders, n_pairs). Per-sample quantities are permuted once, up front.
"""

from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import Interval

from ._plan import AllPairs, SampleBlocks

# Constraints (scikit-learn's parameter validation) of the parameters every statistic takes.
PARAMETER_CONSTRAINTS = {
    "block_size": [Interval(Integral, 2, None, closed="left")],
    "n_repetitions": [Interval(Integral, 1, None, closed="left")],
}


class _GramStatistic:
    """What HSIC and MMD share: their estimators, sample requirements and pair plans."""

    name = ""

    def __init__(self, estimator="biased", block_size=20, n_repetitions=3):
        self.estimator = estimator
        self.block_size = block_size
        self.n_repetitions = n_repetitions

    def check(self, n_samples):
        if n_samples < 2:
            raise ValueError(f"{self.name} needs at least 2 samples, got {n_samples}.")
        if self.estimator == "block" and n_samples < self.block_size:
            raise ValueError(
                f"estimator='block' needs at least block_size={self.block_size} samples, got "
                f"{n_samples}; lower block_size or use another estimator."
            )

    def plan(self, n_samples, random_state, pair_bytes, n_jobs=None):
        if self.estimator == "block":
            return SampleBlocks(n_samples, self.block_size, self.n_repetitions, random_state,
                                pair_bytes, n_jobs)
        return AllPairs(n_samples, pair_bytes, n_jobs)


class HSIC(_GramStatistic):
    """HSIC(K, L): biased tr(KHLH)/(n-1)^2, unbiased (Song et al., 2012) or block estimate."""

    name = "HSIC"

    def check(self, n_samples):
        super().check(n_samples)
        if self.estimator == "unbiased" and n_samples < 4:
            raise ValueError(
                f"The unbiased estimator needs at least 4 samples, got {n_samples}; "
                "use estimator='biased'."
            )

    def weights(self, gram, orders, plan):
        """Pair weights for the target Gram matrix ``gram`` (a :class:`TargetGram`)."""
        if self.estimator == "block":
            return self._block_weights(gram, orders, len(plan.members))
        n = gram.n_samples
        arguments = gram.arguments(orders)
        if self.estimator == "biased":
            # (HLH)_ab = L_ab - m_a - m_b + mean(L); the row means of a permuted L are permuted.
            scale = 2.0 / (n - 1) ** 2
            centre = gram.row_means[orders] - gram.row_means.mean() / 2.0
        else:
            # [tr(K~L~) + 1'K~1 1'L~1 / ((n-1)(n-2)) - 2/(n-2) 1'K~L~1] / (n(n-3)) with K~, L~
            # the Gram matrices without their diagonals: linear in K~ with these weights.
            row_sums = n * gram.row_means - gram.diagonal
            scale = 2.0 / (n * (n - 3))
            constant = row_sums.sum() / ((n - 1) * (n - 2))
            centre = row_sums[orders] / (n - 2) - constant / 2.0

        def weights(pairs):
            entries = gram.entries(arguments[:, pairs.a], arguments[:, pairs.b])
            return scale * (entries - centre[:, pairs.a] - centre[:, pairs.b])

        return weights

    def _block_weights(self, gram, orders, n_blocks_total):
        """The mean over all sample blocks of the biased HSIC of each block."""
        arguments = gram.arguments(orders)
        size = self.block_size
        upper = np.triu_indices(size, k=1)
        scale = 2.0 / ((size - 1) ** 2 * n_blocks_total)

        def weights(pairs):
            L = gram.within(arguments[:, pairs.members])  # (n_orders, n_blocks, B, B)
            m = L.mean(axis=-1)
            centred = L - m[..., :, None] - m[..., None, :] + m.mean(axis=-1)[..., None, None]
            return scale * centred[..., upper[0], upper[1]].reshape(len(orders), -1)

        return weights


class MMD(_GramStatistic):
    """MMD^2 between the groups of samples named by integer codes.

    Two groups P, Q: biased (V-statistic) ``MMD^2 = c' K c`` with c = 1/n_P on P and -1/n_Q on
    Q; unbiased (U-statistic) without the diagonal, 1/(n_g (n_g - 1)) within a group. With G
    groups the statistic is the sum of MMD^2 over the G (G - 1) / 2 pairs of groups: within a
    group the weight is (G - 1)/n_g^2 (biased) or (G - 1)/(n_g (n_g - 1)) (unbiased), between
    groups g and h it is -1/(n_g n_h).

    "block" is the incomplete U-statistic (Blom, 1976; Janson, 1984) over the pairs within
    blocks of ``block_size`` samples drawn without regard to the labels, ``n_repetitions``
    times: the unbiased weights times the number of all pairs over the number drawn. It
    estimates the unbiased MMD^2 in O(n B) pairs, and because the pairs do not depend on the
    labels, a permutation of the labels re-weights the same pairs: the test stays exact.
    """

    name = "MMD"

    def weights(self, codes, orders, plan):
        counts = np.bincount(codes).astype(np.float64)
        n_groups = counts.size
        # table[g, h] = 2 W_ab for a in group g and b in group h.
        table = -2.0 / np.outer(counts, counts)
        within = counts**2 if self.estimator == "biased" else counts * (counts - 1)
        np.fill_diagonal(table, 2.0 * (n_groups - 1) / within)
        if self.estimator == "block":
            n = codes.size
            members = plan.members
            drawn = members.shape[0] * members.shape[1] * (members.shape[1] - 1) / 2
            table *= n * (n - 1) / 2 / drawn
        # Each sample's group in each order, in the smallest integer type that holds it
        # (n_orders by n_samples: the largest array of the test).
        ordered = codes.astype(np.min_scalar_type(n_groups))[orders]

        def weights(pairs):
            return table[ordered[:, pairs.a], ordered[:, pairs.b]]

        return weights
