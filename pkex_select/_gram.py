"""Gram matrices given by users, and the target Gram matrix of HSIC whatever its source."""

from functools import cached_property

import numpy as np

from ._scheduling import row_slices
from .kernels import kernel_factor

__all__ = [
    "check_feature_grams",
    "check_gram_matrices",
    "TargetGram",
]


def check_feature_grams(K, statistic):
    """Validate per-feature Gram matrices: symmetric, finite, unit diagonal.

    ``K`` has shape (n_features, n, n), or (n_scales, n_features, n, n) for one stack per
    bandwidth scale; the result always has the second shape.
    """
    K = np.asarray(K, dtype=np.float64)
    if K.ndim not in (3, 4) or K.shape[-1] != K.shape[-2]:
        raise ValueError(
            "K must have shape (n_features, n, n), or (n_scales, n_features, n, n) for one "
            f"stack per bandwidth scale; got {K.shape}."
        )
    K = K if K.ndim == 4 else K[None]
    if K.shape[1] == 0:
        raise ValueError("K holds no features.")
    if K.shape[-1] < 2:
        raise ValueError(f"{statistic} needs at least 2 samples, got {K.shape[-1]}.")
    if not np.all(np.isfinite(K)):
        raise ValueError("K must be finite (no NaN or infinity).")
    if not np.allclose(K, np.swapaxes(K, -1, -2)):
        raise ValueError("The Gram matrices K[j] must be symmetric.")
    if not np.allclose(np.diagonal(K, axis1=-2, axis2=-1), 1.0):
        raise ValueError(
            "Each per-feature Gram matrix K[j] must have a unit diagonal (k_j(x, x) = 1), as "
            "the kernel factors of pkex_select.kernels do; normalise K[j] by "
            "sqrt(diag(K[j]) diag(K[j])^T) first."
        )
    return K


def check_gram_matrices(K, L):
    """Validate per-feature Gram matrices K (see check_feature_grams) and a target Gram matrix L."""
    K = check_feature_grams(K, "HSIC")
    L = np.asarray(L, dtype=np.float64)
    n = K.shape[-1]
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

    def __init__(self, matrix=None, *, Y=None, kernels=None, gamma=None, bandwidths=None):
        self.matrix = matrix
        self.Y, self.kernels, self.gamma, self.bandwidths = Y, kernels, gamma, bandwidths
        self.n_samples = matrix.shape[0] if matrix is not None else Y.shape[0]

    def arguments(self, permutations):
        """Per-sample arguments in each permutation: (n_permutations, n_samples[, n_outputs])."""
        return permutations if self.matrix is not None else self.Y[permutations]

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

    def take(self, rows):
        """L among ``rows`` (its kernel parameters unchanged)."""
        if self.matrix is not None:
            return TargetGram(self.matrix[np.ix_(rows, rows)])
        return TargetGram(
            Y=self.Y[rows], kernels=self.kernels, gamma=self.gamma, bandwidths=self.bandwidths
        )

    def levels(self, most=None):
        """Each sample's level (its distinct target value) and one sample of each level, or
        None where there are more than ``most`` levels.

        L_ab depends on a and b only through their levels: a matrix given by the user has
        one level per sample, a kernel on Y one per distinct row of Y. With ``most``, the
        first ``4 * most + 4`` samples are looked at first: a continuous target shows more
        levels there, and the sort of every sample (0.14 s at 10^6) is not needed.
        """
        if self.matrix is not None:
            if most is not None and self.n_samples > most:
                return None
            everyone = np.arange(self.n_samples)
            return everyone, everyone
        # One output needs no row comparison: the 1-D unique is 5x faster at 10^6 samples
        # and finds the same levels, in the same order.
        rows = self.Y[:, 0] if self.Y.shape[1] == 1 else self.Y
        axis = None if rows.ndim == 1 else 0
        if most is not None and len(np.unique(rows[: 4 * most + 4], axis=axis)) > most:
            return None
        _, representatives, codes = np.unique(
            rows, axis=axis, return_index=True, return_inverse=True
        )
        if most is not None and representatives.size > most:
            return None
        return codes.reshape(-1), representatives

    def __getstate__(self):
        # The cached properties are derived from the rest: left out, so that a cache key
        # (joblib hashes the pickled state) does not depend on what an earlier call computed.
        derived = {k for k, v in vars(TargetGram).items() if isinstance(v, cached_property)}
        return {k: v for k, v in vars(self).items() if k not in derived}

    @cached_property
    def _identity(self):
        return self.arguments(np.arange(self.n_samples)[None, :])[0]

    @cached_property
    def diagonal(self):
        return self.entries(self._identity, self._identity)

    @cached_property
    def row_means(self):
        """Row means of the whole matrix: O(n^2) evaluations in chunks of rows, O(n) memory."""
        everyone = self._identity
        return np.concatenate(
            [
                self.entries(everyone[rows][:, None], everyone[None, :]).mean(axis=1)
                for rows in row_slices(self.n_samples, 8 * self.n_samples * everyone[0].size)
            ]
        )
