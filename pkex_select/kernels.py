"""One-dimensional kernel factors, bandwidth rules and factor tensors.

A product kernel is ``k(x, x') = prod_j k_j(x_j, x'_j)``. Each factor here takes values in
[0, 1] and equals 1 on the diagonal, so removing a feature (its factor set to 1) is the same
as giving it an infinite bandwidth. Factors are parametrised by ``gamma`` as in
:mod:`sklearn.metrics.pairwise`:

========== =================================== =========================
kernel     factor k_j(a, b)                    gamma from a bandwidth s
========== =================================== =========================
rbf        exp(-gamma (a - b)^2)               1 / (2 s^2)
laplacian  exp(-gamma |a - b|)                 1 / s
cauchy     1 / (1 + gamma (a - b)^2)           1 / s^2
delta      1 if a == b else 0 (categorical)    (unused)
========== =================================== =========================
"""

from __future__ import annotations

import ctypes
import math
import mmap
import sys
from functools import lru_cache
from numbers import Real

import numpy as np
from numpy.typing import ArrayLike

from ._scheduling import run_tasks

__all__ = [
    "KERNELS",
    "BANDWIDTH_RULES",
    "bandwidths",
    "gamma_from_bandwidth",
    "kernel_factor",
    "factor_tensor",
    "gram_matrices",
]

KERNELS = ("rbf", "laplacian", "cauchy", "delta")
BANDWIDTH_RULES = ("median", "scott", "silverman", "std")

# Rows used by the median heuristic: its cost is quadratic in them and the median of
# 10^5 or more distances is stable to a few percent.
_MEDIAN_MAX_ROWS = 1000
# pair_factors: the size from which the tensor gets a memory mapping of its own, built in
# blocks of rows whose temporaries stay within the caches.
_PAIR_FACTOR_BYTES = 2**21
_MAPPED_FROM_BYTES = 2**26


def kernel_factor(a: ArrayLike, b: ArrayLike, kernel: str, gamma: ArrayLike = 1.0) -> np.ndarray:
    """Value of a one-dimensional kernel factor, broadcasting ``a`` against ``b``.

    Parameters
    ----------
    a, b : array-like
        Feature values; broadcast against each other.
    kernel : {"rbf", "laplacian", "cauchy", "delta"}
        The factor (see the module table).
    gamma : float or array-like, default=1.0
        Inverse scale, broadcast against ``a - b``; ignored by "delta".

    Returns
    -------
    ndarray
        Factor values in [0, 1].

    Examples
    --------
    >>> from pkex_select.kernels import kernel_factor
    >>> kernel_factor([0.0, 1.0], 0.0, "rbf", gamma=0.5).round(4)
    array([1.    , 0.6065])
    >>> kernel_factor(["a", "b"], "a", "delta")
    array([1., 0.])
    """
    if kernel == "delta":
        return np.equal(a, b).astype(np.float64)
    diff = np.asarray(np.subtract(a, b, dtype=np.float64))  # scalars too: computed in place
    shape = np.broadcast_shapes(diff.shape, np.shape(gamma))
    if shape != diff.shape:  # gamma has more dimensions: the result takes its shape
        diff = np.array(np.broadcast_to(diff, shape))
    return factor_of_difference(diff, kernel, gamma)


def kernel_distances(diff, kernel):
    """The u of each factor k(gamma u) from differences ``a - b``, in place: |a - b| for the
    Laplacian kernel, (a - b)^2 for the RBF and Cauchy kernels."""
    if kernel == "laplacian":
        return np.abs(diff, out=diff)
    return np.square(diff, out=diff)


def factor_of_difference(diff, kernel, gamma=1.0):
    """Kernel factor from the differences ``a - b`` of numeric values, computed in place.

    Every factor here depends on a - b only (delta: a - b == 0), so a pair's factors for
    all features come from one subtraction. ``diff`` (float64) is overwritten and returned.
    """
    if kernel == "delta":
        return np.equal(diff, 0.0, out=diff, casting="unsafe")
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}.")
    kernel_distances(diff, kernel)
    # The exponential kernels' exponent -gamma u in one pass.
    scale = gamma if kernel == "cauchy" else np.negative(gamma)
    if np.all(np.isfinite(gamma)):
        np.multiply(diff, scale, out=diff)
    else:  # equal values stay at difference 0 (factor 1) for any gamma: inf * 0 would be NaN
        np.multiply(diff, scale, out=diff, where=diff != 0)
    if kernel == "cauchy":
        diff += 1.0
        return np.reciprocal(diff, out=diff)
    return np.exp(diff, out=diff)


def gamma_from_bandwidth(kernel: str, bandwidth: ArrayLike) -> np.ndarray:
    """Convert bandwidths (length scales) into the ``gamma`` of each kernel factor.

    Examples
    --------
    >>> from pkex_select.kernels import gamma_from_bandwidth
    >>> gamma_from_bandwidth("rbf", [1.0, 2.0])
    array([0.5  , 0.125])
    """
    s = np.asarray(bandwidth, dtype=np.float64)
    if np.any(~np.isfinite(s)) or np.any(s <= 0):
        raise ValueError("Bandwidths must be positive and finite.")
    # Extreme bandwidths give gamma 0 or inf: a constant factor or a delta kernel, which the
    # kernels evaluate as such, so the overflow is no error.
    with np.errstate(over="ignore", divide="ignore"):
        if kernel == "rbf":
            return 1.0 / (2.0 * s**2)
        if kernel == "laplacian":
            return 1.0 / s
        if kernel == "cauchy":
            return 1.0 / s**2
    if kernel == "delta":
        return np.ones_like(s)
    raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}.")


def bandwidths(X: ArrayLike, rule: str | ArrayLike = "median") -> np.ndarray:
    """Per-feature bandwidths (length scales) by a rule of thumb.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Numeric data, ideally standardised so that rules compare features on one scale.
    rule : {"median", "scott", "silverman", "std"} or float or array-like, default="median"
        - "median": the median heuristic, the median of ``|x_a - x_b|`` over pairs of distinct
          rows (on at most 1000 evenly spaced rows). A feature whose median distance is 0
          (mostly tied values) gets the mean of its nonzero distances.
        - "scott": 1.06 std n^(-1/5); "silverman": 0.9 min(std, IQR / 1.34) n^(-1/5),
          the one-dimensional density-estimation rules.
        - "std": the standard deviation.
        - a positive number or one per feature: used as given.

        A feature with no spread at all (constant) gets bandwidth 1; its factor is then 1 for
        every pair and its Shapley value is exactly 0.

    Returns
    -------
    ndarray of shape (n_features,)

    Examples
    --------
    >>> import numpy as np
    >>> from pkex_select.kernels import bandwidths
    >>> X = np.column_stack([np.arange(5.0), 10 * np.arange(5.0)])
    >>> bandwidths(X, "median")
    array([ 2., 20.])
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}.")
    n_samples, n_features = X.shape
    if not isinstance(rule, str):
        values = np.broadcast_to(np.asarray(rule, dtype=np.float64), (n_features,)).copy()
        if np.any(~np.isfinite(values)) or np.any(values <= 0):
            raise ValueError(f"Bandwidths must be positive and finite, got {rule!r}.")
        return values
    if rule == "median":
        values = _median_distance(X)
    elif rule in ("scott", "silverman", "std"):
        std = X.std(axis=0, ddof=1) if n_samples > 1 else np.zeros(n_features)
        factor = n_samples ** (-1.0 / 5.0)
        if rule == "std":
            values = std
        elif rule == "scott":
            values = 1.06 * std * factor
        else:
            q75, q25 = np.percentile(X, [75, 25], axis=0)
            spread = np.minimum(std, (q75 - q25) / 1.34)
            values = 0.9 * np.where(spread > 0, spread, std) * factor
    else:
        raise ValueError(
            f"rule must be one of {BANDWIDTH_RULES} or positive numbers, got {rule!r}."
        )
    return np.where(values > 0, values, 1.0)


def _median_distance(X):
    n_samples = X.shape[0]
    rows = np.linspace(0, n_samples - 1, min(n_samples, _MEDIAN_MAX_ROWS)).round().astype(int)
    sample = X[rows]
    values = np.empty(X.shape[1])
    for j in range(X.shape[1]):
        median = median_of_distances(sample[:, j])
        if median == 0:
            a, b = np.triu_indices(sample.shape[0], k=1)
            distances = np.abs(sample[a, j] - sample[b, j])
            if np.any(distances > 0):
                median = distances[distances > 0].mean()
        values[j] = median
    return values


# median_of_distances: pairs sampled to bracket the median, and the bracket's half-width in
# standard errors of the sample's median rank (a bracket that misses is widened).
_BRACKET_PAIRS = 20_000
_BRACKET_ERRORS = 6.0


@lru_cache(maxsize=4)
def _bracket_pairs(size):
    """The pairs ``(first, second)`` of distinct rows :func:`median_of_distances` samples
    among ``size`` values: the same for every column of a data set, so drawn once."""
    first, second = np.random.default_rng(0).integers(0, size, (2, _BRACKET_PAIRS))
    distinct = first != second
    first, second = first[distinct], second[distinct]
    first.flags.writeable = second.flags.writeable = False
    return first, second


def median_of_distances(values):
    """``np.median`` of ``|values[a] - values[b]|`` over the pairs a < b, to the last bit,
    without computing them all.

    Sorted, row i's distances ``s[k] - s[i]``, k > i, are nondecreasing in k (rounding is
    monotone), so the number at most t is found per row by a binary search, fixed up where
    ``s[i] + t`` rounds across a value. A sample of pairs brackets the median; the
    distances inside the bracket (a few percent of them) are computed and the middle one
    (or two) selected. O(m log m) per count, against m^2 / 2 distances and their partition.
    """
    ordered = np.sort(np.asarray(values, dtype=np.float64))
    size = ordered.size
    n_pairs = size * (size - 1) // 2
    middle = np.array([(n_pairs - 1) // 2, n_pairs // 2])
    if n_pairs <= 4 * _BRACKET_PAIRS:
        a, b = np.triu_indices(size, k=1)
        return float(np.median(ordered[b] - ordered[a])) if n_pairs else 0.0
    rows = np.arange(size)

    def ends(t):
        """Per row i, the first k > i with s[k] - s[i] > t."""
        end = np.maximum(np.searchsorted(ordered, ordered + t, side="right"), rows + 1)
        while True:
            back = (end > rows + 1) & (ordered[end - 1] - ordered > t)
            if not back.any():
                break
            end[back] = np.maximum(np.searchsorted(ordered, ordered[end[back] - 1]), rows[back] + 1)
        while True:
            inside = end < size
            inside[inside] = ordered[end[inside]] - ordered[inside] <= t
            if not inside.any():
                return end
            end[inside] = np.searchsorted(ordered, ordered[end[inside]], side="right")

    first, second = _bracket_pairs(size)
    sample = np.abs(ordered[first] - ordered[second])
    spread = _BRACKET_ERRORS * 0.5 * sample.size**0.5
    # The bracket's ends as in the sorted sample, from a partition (a seventh of a sort).
    ends_at = [
        max(int(sample.size / 2 - spread), 0),
        min(int(sample.size / 2 + spread), sample.size - 1),
    ]
    low, high = np.partition(sample, ends_at)[ends_at]
    below, through = ends(low) - rows - 1, ends(high) - rows - 1
    if below.sum() > middle[0] or through.sum() <= middle[1]:  # missed: every distance
        below, through = np.zeros(size, dtype=np.intp), size - rows - 1
    # The distances in (low, high], row by row.
    counts = through - below
    starts = rows + 1 + below
    offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    inside = ordered[np.repeat(starts, counts) + offsets] - np.repeat(ordered, counts)
    picked = np.partition(inside, middle - below.sum())[middle - below.sum()]
    return float(picked.mean())


def _as_kernel_list(kernels, n_features):
    if isinstance(kernels, str):
        kernels = [kernels] * n_features
    kernels = list(kernels)
    if len(kernels) != n_features:
        raise ValueError(f"Got {len(kernels)} kernels for {n_features} features.")
    for kernel in kernels:
        if kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}.")
    return kernels


def _as_gamma(gamma, n_features):
    if isinstance(gamma, Real):
        gamma = np.full(n_features, float(gamma))
    gamma = np.asarray(gamma, dtype=np.float64)
    if gamma.shape != (n_features,):
        raise ValueError(f"gamma must be a number or have shape ({n_features},).")
    if np.any(~np.isfinite(gamma)) or np.any(gamma < 0):
        raise ValueError("gamma must be finite and non-negative.")
    return gamma


def factor_tensor(
    A: ArrayLike, B: ArrayLike, kernels: str | list = "rbf", gamma: ArrayLike = 1.0
) -> np.ndarray:
    """Kernel factors between every row of ``A`` and every row of ``B``.

    Parameters
    ----------
    A : array-like of shape (n_a, n_features)
    B : array-like of shape (n_b, n_features)
    kernels : str or sequence of str, default="rbf"
        One kernel for all features or one per feature.
    gamma : float or array-like of shape (n_features,), default=1.0

    Returns
    -------
    Z : ndarray of shape (n_a, n_b, n_features)
        ``Z[a, b, j] = k_j(A[a, j], B[b, j])``; the factors of the pair game.

    Examples
    --------
    >>> import numpy as np
    >>> from pkex_select.kernels import factor_tensor
    >>> Z = factor_tensor(np.zeros((1, 2)), np.array([[0.0, 1.0]]), ["rbf", "delta"])
    >>> Z
    array([[[1., 0.]]])
    """
    A, B = np.asarray(A), np.asarray(B)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[1]:
        raise ValueError(
            f"A and B must be 2-D with the same number of columns; got {A.shape}, {B.shape}."
        )
    n_features = A.shape[1]
    return pair_factors(A, B, _as_kernel_list(kernels, n_features), _as_gamma(gamma, n_features))


def _fresh_mapping(n_bytes):
    """An anonymous memory mapping of ``n_bytes`` as an array of float64, its pages mapped
    at once where the system allows (Linux's MAP_POPULATE): one call instead of a page fault
    per 4 kB on first write, which took 0.11 s of a 160 MB factor tensor's 0.18 s (0.06 s
    populated). On Linux the call is made through ctypes, which releases the GIL: Python's
    mmap holds it for the whole call, and a thread beside (the ANOVA game of a fit with
    ``n_jobs``) stalled for all 30 ms of an 80 MB mapping."""
    if _LIBC is not None:
        try:
            return np.asarray(_PopulatedMapping(n_bytes))
        except OSError:  # let Python's mmap raise or succeed with its own message
            pass
    populate = getattr(mmap, "MAP_POPULATE", 0)
    if populate and hasattr(mmap, "MAP_ANONYMOUS"):
        mapping = mmap.mmap(-1, n_bytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | populate)
    else:
        mapping = mmap.mmap(-1, n_bytes)
    return np.frombuffer(mapping, dtype=np.float64)


def _load_libc():
    """libc's mmap and munmap through ctypes on Linux (where MAP_POPULATE exists), else None."""
    if not sys.platform.startswith("linux") or not hasattr(mmap, "MAP_POPULATE"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = (
            [ctypes.c_void_p, ctypes.c_size_t] + [ctypes.c_int] * 3 + [ctypes.c_long]
        )
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _load_libc()


class _PopulatedMapping:
    """An anonymous private mapping of ``n_bytes`` with its pages populated, made by libc's
    mmap (:func:`_fresh_mapping`); NumPy arrays on it (``np.asarray``) keep it as their base,
    and it is unmapped when the last of them goes."""

    address = None

    def __init__(self, n_bytes):
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | mmap.MAP_POPULATE
        address = _LIBC.mmap(None, n_bytes, mmap.PROT_READ | mmap.PROT_WRITE, flags, -1, 0)
        if address is None or address == ctypes.c_void_p(-1).value:  # MAP_FAILED
            raise OSError(ctypes.get_errno(), "mmap failed")
        # Bound here: at the interpreter's exit the module's globals may be gone first.
        self.address, self.n_bytes, self._munmap = address, n_bytes, _LIBC.munmap
        self.__array_interface__ = {
            "data": (address, False),
            "shape": (n_bytes // 8,),
            "typestr": "<f8",
            "version": 3,
        }

    def __del__(self):
        if self.address is not None:
            self._munmap(self.address, self.n_bytes)


def pair_factors(A, B, kernels, gamma, n_jobs=None):
    """:func:`factor_tensor` on checked inputs (a list of kernels, float ``gamma``, which may
    be infinite: factor 0 off equal values). With one kernel the factors are computed in
    place in the tensor; with several, each kernel's columns as one contiguous block written
    out once (in place on strided views is 5 to 12 times slower).

    A tensor of ``_MAPPED_FROM_BYTES`` or more is built in blocks of rows of ``A`` into an
    anonymous memory mapping of its own. NumPy asks the kernel for huge pages for large
    arrays, and where the kernel compacts memory to find them on request
    (transparent_hugepage/defrag = madvise, as on this project's machine), first writes to
    a fresh 160 MB factor tensor (1000 rows, d = 20) took from 0.07 s to 0.6 s; on ordinary
    pages 0.15 to 0.2 s every time, 0.1 s of it the page faults of the first writes, which
    :func:`_fresh_mapping` takes in one call. Smaller ones (the explainer's batches) are one
    broadcast, which is 4x faster there than a copy into a fresh array. ``n_jobs`` threads
    share the blocks of such a tensor (each entry is computed alone, so the bits do not depend
    on it)."""
    groups = [(k, np.array([j for j, kj in enumerate(kernels) if kj == k])) for k in set(kernels)]
    shape = (A.shape[0], B.shape[0], A.shape[1])
    if 8 * math.prod(shape) < _MAPPED_FROM_BYTES:
        if len(groups) == 1:  # one kernel: no column gathers
            return kernel_factor(A[:, None, :], B[None, :, :], kernels[0], gamma)
        Z, rows = np.empty(shape), A.shape[0]
    else:
        Z = _fresh_mapping(8 * math.prod(shape)).reshape(shape)
        rows = max(1, _PAIR_FACTOR_BYTES // (8 * B.shape[0] * A.shape[1]))

    def write(start):
        block = slice(start, start + rows)
        if len(groups) == 1:  # one kernel: computed in place, no gather or scatter of columns
            np.subtract(A[block, None, :], B[None, :, :], out=Z[block], dtype=np.float64)
            factor_of_difference(Z[block], kernels[0], gamma)
            return
        for kernel, cols in groups:
            Z[block, :, cols] = kernel_factor(
                A[block, None, cols], B[None, :, cols], kernel, gamma[cols]
            )

    for _ in run_tasks(write, range(0, A.shape[0], rows), n_jobs):
        pass
    return Z


def gram_matrices(X: ArrayLike, kernels: str | list = "rbf", gamma: ArrayLike = 1.0) -> np.ndarray:
    """Per-feature Gram matrices ``K[j] = [k_j(x_aj, x_bj)]_ab`` of shape (d, n, n).

    Examples
    --------
    >>> import numpy as np
    >>> from pkex_select.kernels import gram_matrices
    >>> gram_matrices(np.array([[0.0], [1.0]]), "laplacian", gamma=1.0).round(4)
    array([[[1.    , 0.3679],
            [0.3679, 1.    ]]])
    """
    X = np.asarray(X)
    return np.moveaxis(factor_tensor(X, X, kernels, gamma), 2, 0)
