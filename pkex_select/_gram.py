"""Pair weights of HSIC and MMD estimators as functions of the sample order.

Every statistic here is ``sum_{a != b} W_ab K_ab`` for the feature Gram matrix K (DESIGN.md
section 1); the functions below return ``2 W_ab`` for the pairs ``(a, b, ...)`` (a < b) with the
labels or targets taken in each of several orders (permutation tests), shape
(n_orders, n_pairs).
"""

from functools import cached_property

import numpy as np

from .kernels import kernel_factor

# Row blocks of the target Gram matrix evaluated at once when its row means are computed.
_ROWS = 256


class TargetGram:
    """Entries ``L[i, j]`` of a target Gram matrix, from a matrix or from a kernel on y."""

    def __init__(self, matrix=None, *, Y=None, kernels=None, gamma=None):
        self.matrix = matrix
        self.Y, self.kernels, self.gamma = Y, kernels, gamma
        self.n_samples = matrix.shape[0] if matrix is not None else Y.shape[0]

    @cached_property
    def diagonal(self):
        index = np.arange(self.n_samples)
        return self(index, index)

    @cached_property
    def row_means(self):
        """Row means of the whole matrix, O(n^2) evaluations in row blocks (O(n) memory each)."""
        index = np.arange(self.n_samples)
        return np.concatenate([
            self(rows[:, None], index[None, :]).mean(axis=1)
            for rows in np.array_split(index, max(1, self.n_samples // _ROWS))
        ])

    def __call__(self, i, j):
        if self.matrix is not None:
            return self.matrix[i, j]
        values = np.ones(np.broadcast_shapes(np.shape(i), np.shape(j)))
        for k, kernel in enumerate(self.kernels):
            values *= kernel_factor(self.Y[i, k], self.Y[j, k], kernel, self.gamma[k])
        return values


def hsic_weights(gram, estimator):
    """Pair weights of HSIC(K, L): biased tr(KHLH)/(n-1)^2 or unbiased (Song et al., 2012)."""
    n = gram.row_means.size
    m, grand = gram.row_means, gram.row_means.mean()
    if estimator == "biased":
        # (HLH)_ab = L_ab - m_a - m_b + mean(L); the row means of a permuted L are permuted.
        scale = 2.0 / (n - 1) ** 2

        def weights(chunk, orders):
            ia, ib = orders[:, chunk[0]], orders[:, chunk[1]]
            return scale * (gram(ia, ib) - m[ia] - m[ib] + grand)

        return weights
    # Unbiased: [tr(K~L~) + 1'K~1 1'L~1 / ((n-1)(n-2)) - 2/(n-2) 1'K~L~1] / (n(n-3)), with
    # K~, L~ the Gram matrices with zero diagonals; linear in K~ with the weights below.
    row_sums = n * m - gram.diagonal
    constant = row_sums.sum() / ((n - 1) * (n - 2))
    scale = 2.0 / (n * (n - 3))

    def weights(pairs, orders):
        ia, ib = orders[:, pairs[0]], orders[:, pairs[1]]
        return scale * (gram(ia, ib) + constant - (row_sums[ia] + row_sums[ib]) / (n - 2))

    return weights


def block_members(n_samples, block_size, n_repetitions, random_state):
    """Sample indices of the blocks, shape (n_repetitions * (n // B), B).

    Each repetition shuffles the samples and cuts them into n // B blocks of B samples (the
    remainder is left out of that repetition), as in block HSIC Lasso (Yamada et al., 2018).
    """
    n_blocks = n_samples // block_size
    return np.concatenate([
        random_state.permutation(n_samples)[: n_blocks * block_size].reshape(n_blocks, block_size)
        for _ in range(n_repetitions)
    ])


def block_pairs(members):
    """Pairs ``(a, b, members)`` of the blocks ``members``, in :func:`block_hsic_weights` order."""
    upper = np.triu_indices(members.shape[1], k=1)
    return members[:, upper[0]].ravel(), members[:, upper[1]].ravel(), members


def block_hsic_weights(gram, n_blocks_total):
    """Pair weights of the block estimator: the mean over blocks of the biased block HSIC."""

    def weights(pairs, orders):
        members = pairs[2]
        size = members.shape[1]
        upper = np.triu_indices(size, k=1)
        labels = orders[:, members]  # (n_orders, n_blocks, B)
        L = gram(labels[..., :, None], labels[..., None, :])
        m = L.mean(axis=-1)
        centred = L - m[..., :, None] - m[..., None, :] + m.mean(axis=-1)[..., None, None]
        scale = 2.0 / ((size - 1) ** 2 * n_blocks_total)
        return scale * centred[..., upper[0], upper[1]].reshape(orders.shape[0], -1)

    return weights


def mmd_weights(codes, estimator):
    """Pair weights of MMD^2 between the groups named by integer ``codes``.

    Two groups P, Q: biased (V-statistic) ``MMD^2 = c' K c`` with c = 1/n_P on P and -1/n_Q on
    Q; unbiased (U-statistic) without the diagonal, 1/(n_g (n_g - 1)) within a group. With G
    groups the statistic is the sum of MMD^2 over the G (G - 1) / 2 pairs of groups: within a
    group the weight is (G - 1)/n_g^2 (biased) or (G - 1)/(n_g (n_g - 1)) (unbiased), between
    groups g and h it is -1/(n_g n_h).
    """
    counts = np.bincount(codes).astype(np.float64)
    n_groups = counts.size
    within = (n_groups - 1) / (counts**2 if estimator == "biased" else counts * (counts - 1))

    def weights(pairs, orders):
        ga, gb = codes[orders[:, pairs[0]]], codes[orders[:, pairs[1]]]
        between = -1.0 / (counts[ga] * counts[gb])
        return 2.0 * np.where(ga == gb, within[ga], between)

    return weights
