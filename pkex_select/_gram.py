"""Pair weights of HSIC and MMD estimators, for the observed order and permutations.

Every statistic here is ``sum_{a != b} W_ab K_ab`` for the feature Gram matrix K
(docs/design.md, section 1). Each factory below takes ``orders`` (index arrays of shape
(n_orders, n_samples): row 0 the identity, the others permutations of the labels or targets)
and returns a function from a block of pairs ``(a, b, ...)`` (a < b) to their weights
``2 W_ab`` in every order, shape (n_orders, n_pairs). The per-sample quantities are permuted
once, up front.
"""

from functools import cached_property

import numpy as np

from .kernels import kernel_factor

# Row blocks of the target Gram matrix evaluated at once when its row means are computed.
_ROWS = 256


def check_feature_grams(K, statistic):
    """Validate per-feature Gram matrices K (d, n, n): symmetric, finite, unit diagonal."""
    K = np.asarray(K, dtype=np.float64)
    if K.ndim != 3 or K.shape[1] != K.shape[2]:
        raise ValueError(f"K must have shape (n_features, n, n); got {K.shape}.")
    if K.shape[1] < 2:
        raise ValueError(f"{statistic} needs at least 2 samples, got {K.shape[1]}.")
    if not np.all(np.isfinite(K)):
        raise ValueError("K must be finite (no NaN or infinity).")
    if not np.allclose(K, np.swapaxes(K, 1, 2)):
        raise ValueError("The Gram matrices K[j] must be symmetric.")
    if not np.allclose(np.diagonal(K, axis1=1, axis2=2), 1.0):
        raise ValueError(
            "Each per-feature Gram matrix K[j] must have a unit diagonal (k_j(x, x) = 1), as "
            "the kernel factors of pkex_select.kernels do; normalise K[j] by "
            "sqrt(diag(K[j]) diag(K[j])^T) first."
        )
    return K


def check_gram_matrices(K, L):
    """Validate per-feature Gram matrices K (d, n, n) and a target Gram matrix L (n, n)."""
    K = check_feature_grams(K, "HSIC")
    L = np.asarray(L, dtype=np.float64)
    n = K.shape[1]
    if L.shape != (n, n):
        raise ValueError(f"L must have shape ({n}, {n}) to match K; got {L.shape}.")
    if not np.all(np.isfinite(L)):
        raise ValueError("L must be finite (no NaN or infinity).")
    if not np.allclose(L, L.T):
        raise ValueError("The target Gram matrix L must be symmetric.")
    return K, L


class TargetGram:
    """A target Gram matrix L, given as a matrix or as a kernel on the target values Y.

    Entries are looked up from per-sample arguments: the sample indices for a matrix, the
    target values for a kernel, so that permuting the samples permutes the arguments.
    """

    def __init__(self, matrix=None, *, Y=None, kernels=None, gamma=None):
        self.matrix = matrix
        self.Y, self.kernels, self.gamma = Y, kernels, gamma
        self.n_samples = matrix.shape[0] if matrix is not None else Y.shape[0]

    def arguments(self, orders):
        """Per-sample arguments in each order: (n_orders, n_samples[, n_outputs])."""
        return orders if self.matrix is not None else self.Y[orders]

    def entries(self, first, second):
        """L between samples given by their arguments (broadcast against each other)."""
        if self.matrix is not None:
            return self.matrix[first, second]
        shape = np.broadcast_shapes(first.shape, second.shape)[:-1]
        values = np.ones(shape)
        for k, kernel in enumerate(self.kernels):
            values *= kernel_factor(first[..., k], second[..., k], kernel, self.gamma[k])
        return values

    def within(self, arguments):
        """L among each group of samples: arguments (..., B[, n_outputs]) -> (..., B, B)."""
        if self.matrix is not None:
            return self.entries(arguments[..., :, None], arguments[..., None, :])
        return self.entries(arguments[..., :, None, :], arguments[..., None, :, :])

    @cached_property
    def _identity(self):
        return self.arguments(np.arange(self.n_samples)[None, :])[0]

    @cached_property
    def diagonal(self):
        return self.entries(self._identity, self._identity)

    @cached_property
    def row_means(self):
        """Row means of the whole matrix, O(n^2) evaluations in row blocks (O(n) memory each)."""
        everyone = self._identity
        return np.concatenate([
            self.entries(everyone[rows][:, None], everyone[None, :]).mean(axis=1)
            for rows in np.array_split(np.arange(self.n_samples), max(1, self.n_samples // _ROWS))
        ])


def hsic_weights(gram, estimator, orders):
    """Pair weights of HSIC(K, L): biased tr(KHLH)/(n-1)^2 or unbiased (Song et al., 2012)."""
    n = gram.n_samples
    arguments = gram.arguments(orders)
    if estimator == "biased":
        # (HLH)_ab = L_ab - m_a - m_b + mean(L); the row means of a permuted L are permuted.
        scale = 2.0 / (n - 1) ** 2
        centre = gram.row_means[orders] - gram.row_means.mean() / 2.0
    else:
        # [tr(K~L~) + 1'K~1 1'L~1 / ((n-1)(n-2)) - 2/(n-2) 1'K~L~1] / (n(n-3)) with K~, L~ the
        # Gram matrices without their diagonals: linear in K~ with these weights.
        row_sums = n * gram.row_means - gram.diagonal
        scale = 2.0 / (n * (n - 3))
        constant = row_sums.sum() / ((n - 1) * (n - 2))
        centre = row_sums[orders] / (n - 2) - constant / 2.0

    def weights(pairs):
        a, b = pairs[0], pairs[1]
        entries = gram.entries(arguments[:, a], arguments[:, b])
        return scale * (entries - centre[:, a] - centre[:, b])

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


def block_hsic_weights(gram, n_blocks_total, orders):
    """Pair weights of the block estimator: the mean over blocks of the biased block HSIC."""
    arguments = gram.arguments(orders)

    def weights(pairs):
        members = pairs[2]
        size = members.shape[1]
        upper = np.triu_indices(size, k=1)
        L = gram.within(arguments[:, members])  # (n_orders, n_blocks, B, B)
        m = L.mean(axis=-1)
        centred = L - m[..., :, None] - m[..., None, :] + m.mean(axis=-1)[..., None, None]
        scale = 2.0 / ((size - 1) ** 2 * n_blocks_total)
        return scale * centred[..., upper[0], upper[1]].reshape(len(orders), -1)

    return weights


def mmd_weights(codes, estimator, orders):
    """Pair weights of MMD^2 between the groups named by integer ``codes``.

    Two groups P, Q: biased (V-statistic) ``MMD^2 = c' K c`` with c = 1/n_P on P and -1/n_Q on
    Q; unbiased (U-statistic) without the diagonal, 1/(n_g (n_g - 1)) within a group. With G
    groups the statistic is the sum of MMD^2 over the G (G - 1) / 2 pairs of groups: within a
    group the weight is (G - 1)/n_g^2 (biased) or (G - 1)/(n_g (n_g - 1)) (unbiased), between
    groups g and h it is -1/(n_g n_h).
    """
    counts = np.bincount(codes).astype(np.float64)
    n_groups = counts.size
    # table[g, h] = 2 W_ab for a in group g and b in group h.
    table = -2.0 / np.outer(counts, counts)
    within = counts**2 if estimator == "biased" else counts * (counts - 1)
    np.fill_diagonal(table, 2.0 * (n_groups - 1) / within)
    flat_table = table.ravel()
    ordered = codes[orders]  # each sample's group in each order

    def weights(pairs):
        return flat_table[ordered[:, pairs[0]] * n_groups + ordered[:, pairs[1]]]

    return weights
