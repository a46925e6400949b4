"""Exact Shapley values of the product-kernel pair game.

The game is ``v(S) = sum_p w_p prod_{j in S} z_pj prod_{j not in S} b_pj`` (docs/design.md,
section 1): removing feature j replaces its kernel factor by the baseline ``b_pj``, which is 1
(an infinite bandwidth) unless given. Its Shapley value is

    phi_j = sum_p w_p (z_pj - b_pj) I_pj,
    I_pj = integral_0^1 prod_{i != j} ((1 - t) b_pi + t z_pi) dt,

because the Shapley weight q! (d-1-q)! / d! is the Beta integral of t^q (1-t)^(d-1-q). The
integrand is a polynomial of degree d - 1 in t, so Gauss-Legendre quadrature with ceil(d / 2)
nodes on [0, 1] evaluates it exactly. The leave-one-out products come from prefix and suffix
products (no division), so zero and negative factors are handled like any other. For factors in
[0, 1] (RBF, Laplacian, Cauchy and delta kernels) every term is positive: there is no
cancellation and nothing overflows, whatever the number of features.

This module knows nothing about models, HSIC or MMD: it maps factors and weights to values.
"""

import math
from functools import lru_cache
from numbers import Integral, Real

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs
from scipy.special import gammaln, roots_legendre

__all__ = ["BLOCK_BYTES", "pair_contributions", "rows_per_task", "shapley_values",
           "weighted_contributions"]

# The one memory budget of the package: what one task may hold in its largest temporaries
# (a block of factors, its contributions, its weights; the NumPy path's tiles of leave-one-out
# products). Small enough for the caches and below the allocator's mmap threshold, so a new
# block costs no page faults.
BLOCK_BYTES = 2**20
# Below this many multiply-adds (rows * d^2 / 2) a thread pool costs more than it saves.
_MIN_PARALLEL_WORK = 2e7
# Pairs processed together by the compiled kernel, the vectorised axis of its buffers: at
# most 64, and fewer for many features, so that its three (features, pairs) buffers stay
# within _KERNEL_CACHE_BYTES (a core's L2 cache on common CPUs); at least 16, below which loop
# overhead costs more than the cache misses it saves. At d = 1000 this halves the time.
_PAIR_BLOCK = 64
_KERNEL_CACHE_BYTES = 2**19
# Default bound on the quadrature error of each integral: the unit roundoff, so that the
# adaptive rule agrees with the exact one to rounding.
DEFAULT_TOL = 2.0**-53
# Up to this many exact nodes (d <= 16) the bound saves too little to pay for itself.
_MIN_ADAPTIVE_NODES = 8
# The series path (see _series_plan) applies while every |1 - z| is at most this, and runs
# when its nodes plus terms are at most this many times the quadrature path's nodes
# (measured: one series node or term costs about a tenth of a quadrature node).
_SERIES_MAX_U = 0.5
_SERIES_COST_RATIO = 4.0
# What grouping pairs by node count costs, in nodes per pair (measured: sort, gather, scatter).
_GATHER_NODES = 2
# Below this many multiply-adds (rows * nodes * d) the bound's bookkeeping costs more than 5%.
_MIN_ADAPTIVE_WORK = 1e6


def _legendre_with_derivative(n, x):
    """P_n(x) and (1 - x^2) P_n'(x) by the three-term recurrence (stable for Legendre)."""
    previous, current = np.ones_like(x), x.copy()
    for k in range(2, n + 1):
        previous, current = current, ((2 * k - 1) * x * current - (k - 1) * previous) / k
    return current, n * (previous - x * current)


@lru_cache(maxsize=64)
def gauss_rule(n_nodes):
    """Gauss-Legendre rule with ``n_nodes`` nodes on [0, 1]: exact to degree 2 n - 1.

    Nodes are found by Newton's method in the angle theta (x = cos theta) so that both t and
    1 - t are accurate to a few ulps near the end points, where factors (1 - t) + t z with
    small z are products of a few hundred small numbers; ``1.0 - t`` would lose up to half
    of the digits there.

    Returns
    -------
    nodes, complements, weights : ndarray of shape (n_nodes,)
        t, 1 - t and the positive weights (summing to 1); read-only.
    """
    x, _ = roots_legendre(n_nodes)
    # The nodes are symmetric: refine those with x >= 0 and mirror them.
    theta = 2.0 * np.arcsin(np.sqrt((1.0 - x[n_nodes // 2 :]) / 2.0))
    for _ in range(3):
        p, dp = _legendre_with_derivative(n_nodes, np.cos(theta))
        theta += p * np.sin(theta) / dp
    p, dp = _legendre_with_derivative(n_nodes, np.cos(theta))
    half_weights = np.sin(theta) ** 2 / dp**2  # 2 / ((1 - x^2) P_n'(x)^2), halved for [0, 1]
    upper, lower = np.cos(theta / 2.0) ** 2, np.sin(theta / 2.0) ** 2
    # For odd n the first of them is the middle node x = 0, which has no mirror image.
    mirror = slice(None, None, -1) if n_nodes % 2 == 0 else slice(None, 0, -1)
    nodes = np.concatenate([lower[mirror], upper])
    complements = np.concatenate([upper[mirror], lower])
    weights = np.concatenate([half_weights[mirror], half_weights])
    for array in (nodes, complements, weights):
        array.flags.writeable = False
    return nodes, complements, weights


def exact_node_count(n_features):
    """ceil(d / 2): the nodes that integrate the degree d - 1 integrand exactly."""
    return max(1, (n_features + 1) // 2)


def _log_error_bound(spread, first_missed):
    """log of sum_{q >= r} S^q / q! <= S^r / r! / (1 - S / (r + 1)), or inf; r = first_missed."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = spread / (first_missed + 1)
        bound = first_missed * np.log(spread) - gammaln(first_missed + 1.0) - np.log1p(-ratio)
    return np.where(ratio < 1, bound, np.inf)


@lru_cache(maxsize=32)
def _largest_spreads(max_nodes, tol, weight_degree=0):
    """For m = 1, ..., max_nodes: the largest S for which m nodes are proven within tol.

    The bound increases with S, so bisection on log S finds it; the values increase with m.
    """
    n_nodes = np.arange(1, max_nodes + 1, dtype=np.float64)
    first_missed = np.maximum(2 * n_nodes - weight_degree, 1)
    low, high = np.full(max_nodes, -745.0), np.log(first_missed + 1)
    for _ in range(80):
        middle = (low + high) / 2
        within = _log_error_bound(np.exp(middle), first_missed) <= np.log(tol)
        low, high = np.where(within, middle, low), np.where(within, high, middle)
    return np.exp(low)


def node_counts(spreads, n_features, tol=DEFAULT_TOL, weight_degree=0):
    """Quadrature nodes each pair needs: the fewest whose error bound is at most ``tol``.

    With ``u_i = 1 - z_i`` the integrand is ``prod_i (1 - t u_i) = sum_q (-1)^q e_q(u) t^q``.
    An m-node Gauss rule integrates every power below 2m exactly and misses each higher
    power by at most 1 (the integral and the rule of t^q both lie in [0, 1]), and
    ``|e_q(u)| <= S^q / q!`` with ``S = sum_i |u_i|``, so the error of each integral is at
    most ``sum_{q >= 2m} S^q / q! <= S^{2m} / (2m)! / (1 - S / (2m + 1))``. This holds for
    any real factors, and with factors ``(1 - t) b_i + t z_i`` and ``S = sum_i |z_i - b_i|``
    for baselines |b_i| <= 1. The count is capped at ceil(d / 2), where the rule is exact;
    ``tol=0`` asks for that everywhere. A polynomial weight of degree g on [0, 1] (the
    Shapley-Taylor index's 2 (1 - t)) whose rule of every t^q also lies in [0, 1] leaves 2m - g
    as the first power missed.

    Parameters
    ----------
    spreads : ndarray
        ``S = sum_i |1 - z_i|`` of each pair.
    n_features : int
    tol : float, default=2**-53
        Bound on the absolute error of each integral (the unit roundoff by default, so the
        values agree with the exact rule to rounding).
    weight_degree : int, default=0
        Degree of the polynomial weight of the integral.

    Returns
    -------
    ndarray of int, the shape of ``spreads``
    """
    cap = exact_node_count(n_features)
    if tol <= 0:
        return np.full(np.shape(spreads), cap)
    largest = _largest_spreads(cap, float(tol), weight_degree)
    counts = np.searchsorted(largest, spreads, side="left") + 1
    return np.minimum(counts, cap)


def _loo_integrals_numpy(Z, base, nodes, complements, node_weights):
    """Reference implementation of ``I_pj`` with NumPy tiles of (rows, nodes, features)."""
    n_rows, n_features = Z.shape
    base = 1.0 if base is None else base[:, None, :]
    integrals = np.zeros((n_rows, n_features))
    block = max(1, 2 * BLOCK_BYTES // (8 * max(n_rows, 1) * n_features * 3))
    for start in range(0, nodes.size, block):
        block_slice = slice(start, start + block)
        t = nodes[block_slice, None]
        # (rows, nodes, features)
        factors = complements[block_slice, None] * base + t * Z[:, None, :]
        loo = np.ones_like(factors)
        np.cumprod(factors[:, :, :-1], axis=2, out=loo[:, :, 1:])
        suffix = np.cumprod(factors[:, :, :0:-1], axis=2)[:, :, ::-1]
        loo[:, :, :-1] *= suffix
        integrals += np.matmul(node_weights[block_slice], loo)
    return integrals


def _cache_outside_the_package(dispatcher):
    """Cache compiled code in the user's cache directory, never next to the source.

    numba's default ``cache=True`` writes into ``pkex_select/__pycache__``. Those files are
    not in the wheel's record, so ``pip uninstall`` leaves the folder behind, and the empty
    namespace package it leaves shadows a later editable install. Only the locators that
    honour ``NUMBA_CACHE_DIR`` or use the user-wide cache are kept; where neither directory
    is writable the kernel is compiled on each run instead.
    """
    try:
        from numba.core import caching
    except ImportError:  # pragma: no cover - numba moved its private caching module
        return dispatcher

    class OutOfTreeImpl(caching.CompileResultCacheImpl):
        _locator_classes = [caching.UserProvidedCacheLocator, caching.UserWideCacheLocator]

    class OutOfTreeCache(caching.FunctionCache):
        _impl_class = OutOfTreeImpl

    try:
        dispatcher._cache = OutOfTreeCache(dispatcher.py_func)
    except RuntimeError:  # no writable cache directory: compile on each run
        pass
    return dispatcher


def _make_numba_kernels():
    try:
        import numba
    except ImportError:  # pragma: no cover - numba is a core dependency
        return None, None, None

    def compile(function):
        return _cache_outside_the_package(
            numba.njit(nogil=True, fastmath={"reassoc", "contract"})(function))

    @compile
    def loo_integrals(Z, base, nodes, complements, node_weights, pair_block):  # pragma: no cover
        n_rows, n_features = Z.shape
        integrals = np.empty((n_rows, n_features))
        # Pairs are the contiguous (vectorised) axis: the products run along features.
        block = min(pair_block, n_rows)
        factors = np.empty((n_features, block))
        origins = np.empty((n_features, block))
        prefix = np.empty((n_features, block))
        acc = np.empty((n_features, block))
        running = np.empty(block)
        for start in range(0, n_rows, block):
            width = min(block, n_rows - start)
            for j in range(n_features):
                for p in range(width):
                    factors[j, p] = Z[start + p, j]
                    if base is not None:  # numba prunes the branch when base is None
                        origins[j, p] = base[start + p, j]
            acc[:, :width] = 0.0
            for k in range(nodes.size):
                t = nodes[k]
                one_minus_t = complements[k]
                # Forward sweep: prefix[j] = prod_{i < j} ((1 - t) b_i + t z_i).
                running[:width] = 1.0
                for j in range(n_features):
                    for p in range(width):
                        prefix[j, p] = running[p]
                        if base is None:
                            running[p] *= one_minus_t + t * factors[j, p]
                        else:
                            running[p] *= one_minus_t * origins[j, p] + t * factors[j, p]
                # Backward sweep, the quadrature weight folded into the suffix product.
                running[:width] = node_weights[k]
                for j in range(n_features - 1, -1, -1):
                    for p in range(width):
                        acc[j, p] += prefix[j, p] * running[p]
                        if base is None:
                            running[p] *= one_minus_t + t * factors[j, p]
                        else:
                            running[p] *= one_minus_t * origins[j, p] + t * factors[j, p]
            for j in range(n_features):
                for p in range(width):
                    integrals[start + p, j] = acc[j, p]
        return integrals

    @compile
    def spreads(Z, base):  # pragma: no cover
        # One pass without temporaries: S_p = sum_j |z_pj - b_pj| per row, the largest
        # |z_pj - b_pj| and whether some z_pj exceeds b_pj.
        result = np.empty(Z.shape[0])
        largest = 0.0
        above = False
        for p in range(Z.shape[0]):
            total = 0.0
            for j in range(Z.shape[1]):
                difference = Z[p, j] - (1.0 if base is None else base[p, j])
                total += abs(difference)
                largest = max(largest, abs(difference))
                above = above or difference > 0.0
            result[p] = total
        return result, largest, above

    @compile
    def series_integrals(Z, nodes, node_weights, n_terms):  # pragma: no cover
        # I_pj = sum_{r < n_terms} u_pj^r M_pr with u = 1 - z and the moments
        # M_pr = sum_k w_k t_k^r prod_i (1 - t_k u_pi) (see _series_plan). Every loop
        # runs along the features of one pair: products and Horner steps vectorise.
        n_rows, n_features = Z.shape
        integrals = np.empty((n_rows, n_features))
        u = np.empty(n_features)
        weighted = np.empty(nodes.size)
        moments = np.empty(n_terms)
        for p in range(n_rows):
            for j in range(n_features):
                u[j] = 1.0 - Z[p, j]
            for k in range(nodes.size):
                product = 1.0
                for j in range(n_features):
                    product *= 1.0 - nodes[k] * u[j]
                weighted[k] = node_weights[k] * product
            for r in range(n_terms):
                total = 0.0
                for k in range(nodes.size):
                    total += weighted[k]
                    weighted[k] *= nodes[k]
                moments[r] = total
            horner = integrals[p]
            horner[:] = moments[n_terms - 1]
            for r in range(n_terms - 2, -1, -1):
                for j in range(n_features):
                    horner[j] = horner[j] * u[j] + moments[r]
        return integrals

    return loo_integrals, spreads, series_integrals


_loo_integrals_numba, _spreads_numba, _series_integrals_numba = _make_numba_kernels()
_BACKENDS = ("auto", "numba", "numpy")


def integrals_with_rule(Z, base, rule, backend="auto"):
    """``I_pj`` (see the module docstring) by the quadrature ``rule`` = (t, 1 - t, weights)."""
    if backend == "numpy" or _loo_integrals_numba is None:
        return _loo_integrals_numpy(Z, base, *rule)
    return _loo_integrals_numba(Z, base, *rule, _pair_block_width(Z.shape[1]))


def _pair_block_width(n_features):
    """Pairs per block of the compiled kernel: a multiple of 8 from 16 to 64."""
    fitting = _KERNEL_CACHE_BYTES // (3 * 8 * max(n_features, 1))
    return int(min(_PAIR_BLOCK, max(16, fitting // 8 * 8)))


def adaptive_spreads(Z, base):
    """``S = sum_i |z_i - b_i|`` of each pair, or None where the bound does not apply.

    The bound of :func:`node_counts` needs |b_i| <= 1 (then the coefficients of
    ``prod_i (b_i + t (z_i - b_i))`` are at most ``S^q / q!``): kernel means and the default
    baseline 1 qualify.
    """
    if base is not None and np.abs(base).max(initial=0.0) > 1.0:
        return None
    if _spreads_numba is not None:
        return _spreads_numba(Z, base)[0]
    return np.abs(Z - (1.0 if base is None else base)).sum(axis=1)


def _loo_integrals(Z, backend, tol=DEFAULT_TOL, base=None):
    """``I_pj`` with as many nodes per pair as its error bound needs (see node_counts).

    Pairs needing the same count run together, so the compiled kernel's lanes stay full.
    """
    n_rows, n_features = Z.shape
    cap = exact_node_count(n_features)
    exact = gauss_rule(cap)
    if tol <= 0 or cap <= _MIN_ADAPTIVE_NODES or n_rows * cap * n_features < _MIN_ADAPTIVE_WORK:
        return integrals_with_rule(Z, base, exact, backend)
    series = base is None and backend != "numpy" and _series_integrals_numba is not None
    if series:
        spreads, largest, above = _spreads_numba(Z, None)
    else:
        spreads = adaptive_spreads(Z, base)
    if spreads is None:
        return integrals_with_rule(Z, base, exact, backend)
    counts = node_counts(spreads, n_features, tol)
    if not _saves_enough(counts, cap):  # narrow kernels: the exact rule at once
        return integrals_with_rule(Z, base, exact, backend)
    plan = _series_plan(spreads.max(), largest, above, n_features, tol, counts.max()) if (
        series) else None
    if plan is not None:
        return _series_integrals_numba(Z, plan[0][0], plan[0][2], plan[1])
    most_nodes = int(counts.max())
    if most_nodes * n_rows <= counts.sum() + _GATHER_NODES * n_rows:
        # The counts hardly differ (wide kernels): one rule for all, no gathering.
        return integrals_with_rule(Z, base, gauss_rule(most_nodes), backend)
    # Pairs sorted by count, in groups of the compiled kernel's width, each group with the
    # largest count among its pairs: the kernel's lanes stay full.
    order = np.argsort(counts, kind="stable")
    group_counts = np.maximum.reduceat(counts[order], np.arange(0, n_rows, _PAIR_BLOCK))
    if not _saves_enough(group_counts, cap):
        return integrals_with_rule(Z, base, exact, backend)
    group_of_row = np.repeat(group_counts, _PAIR_BLOCK)[:n_rows]
    starts = np.flatnonzero(np.diff(group_of_row, prepend=-1))
    integrals = np.empty(Z.shape)
    for start, stop in zip(starts, list(starts[1:]) + [n_rows]):
        rows = order[start:stop]
        integrals[rows] = integrals_with_rule(
            Z[rows], None if base is None else base[rows], gauss_rule(int(group_of_row[start])),
            backend)
    return integrals


def _series_plan(spread, largest, above, n_features, tol, quadrature_nodes):
    """Quadrature rule and number of terms of the series path, or None where it costs more.

    With u = 1 - z and ``P(t) = prod_i (1 - t u_i)``, the leave-one-out product is
    ``P(t) / (1 - t u_j)``, so for |u_j| < 1

        I_j = sum_{r >= 0} u_j^r M_r,   M_r = integral_0^1 t^r P(t) dt.

    Truncating after R terms misses at most ``C u^R / ((R + 1) (1 - u))`` with u the largest
    |u_j| and C a bound of |P|: 1 when no factor exceeds 1 (then 0 <= P <= 1), else e^S.
    Each M_r is integrated by an m-node Gauss rule; t^r P(t) is a polynomial whose
    coefficients are at most S^q / q!, so the rule misses at most
    ``sum_{q >= 2m - r} S^q / q!``, the bound of :func:`node_counts` with weight degree
    R - 1. Both parts are kept below tol / 2 (the moments' error is multiplied by at most
    ``sum_r u^r <= 2``), so the result is within ``tol`` like the quadrature path. The
    series needs u <= 1/2; it then costs about (m + R) d per pair in register-bound loops,
    against 2 m' d memory-bound steps of the quadrature path.
    """
    if largest > _SERIES_MAX_U:
        return None
    if largest == 0.0:
        n_terms = 1
    else:
        log_bound = spread if above else 0.0
        n_terms = max(1, math.ceil((math.log(tol / 2) - log_bound + math.log1p(-largest))
                                   / math.log(largest)))
    n_nodes = int(node_counts(np.array([spread]), n_features + n_terms, tol / 4,
                              n_terms - 1)[0])
    if n_nodes + n_terms > _SERIES_COST_RATIO * quadrature_nodes:
        return None
    return gauss_rule(n_nodes), n_terms


def _saves_enough(counts, cap):
    """Whether grouping pairs by node count (about two nodes per pair) pays for itself."""
    return counts.sum() + _GATHER_NODES * counts.size < 0.9 * cap * counts.size


def check_options(backend, tol):
    if backend not in _BACKENDS:
        raise ValueError(f"backend must be one of {_BACKENDS}, got {backend!r}.")
    if backend == "numba" and _loo_integrals_numba is None:
        raise ImportError("backend='numba' needs numba; install it or use backend='numpy'.")
    if not isinstance(tol, Real) or not 0 <= tol < 1:
        raise ValueError(f"tol must be a number in [0, 1), got {tol!r}.")


def thread_pool(n_rows, n_features, n_jobs):
    """A joblib runner yielding results as they come (so partial sums do not pile up);
    sequential when the work is too small to share."""
    if n_rows * n_features**2 / 2 < _MIN_PARALLEL_WORK:
        n_jobs = 1
    return Parallel(n_jobs=n_jobs, prefer="threads", return_as="generator")


def rows_per_task(n_rows, row_bytes, n_jobs=None):
    """Rows of one task: as many as fit in ``BLOCK_BYTES``, and at least four tasks per worker.

    The scheduler of every streamed computation here (the engine's row chunks, the blocks of
    pairs of the HSIC and MMD games, the explainer's batches of points).
    """
    rows = max(1, BLOCK_BYTES // max(1, row_bytes))
    workers = effective_n_jobs(n_jobs)
    if workers > 1:  # a few tasks per worker to balance the load
        rows = min(rows, max(1, -(-n_rows // (4 * workers))))
    return rows


def row_slices(n_rows, row_bytes, chunk_size, n_jobs):
    """Slices of ``chunk_size`` rows, or by default as many as :func:`rows_per_task` gives."""
    if chunk_size is not None:
        if not isinstance(chunk_size, Integral) or isinstance(chunk_size, bool) or chunk_size < 1:
            raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}.")
        rows = int(chunk_size)
    else:
        rows = rows_per_task(n_rows, row_bytes, n_jobs)
    return [slice(s, s + rows) for s in range(0, n_rows, rows)]


def _row_bytes(n_features, n_outputs):
    # Per row: its factors, the quadrature's prefix products and running sums, its
    # contributions and its weighted values, half of them alive at once.
    return 4 * n_features * (3 + n_outputs)


def as_factors(Z):
    Z = np.asarray(Z, dtype=np.float64)
    if Z.ndim not in (2, 3):
        raise ValueError(
            "Z must have shape (n_pairs, n_features) or (n_points, n_pairs, n_features); "
            f"got an array of shape {Z.shape}."
        )
    if Z.shape[-1] == 0:
        raise ValueError("Z has no features (its last axis is empty).")
    if not np.all(np.isfinite(Z)):
        raise ValueError("Z contains NaN or infinity; kernel factors must be finite.")
    return Z


def as_baseline(baseline, Z):
    """The removed-feature factors as a float array of Z's shape, or None for the default 1."""
    if baseline is None:
        return None
    baseline = np.asarray(baseline, dtype=np.float64)
    try:
        baseline = np.broadcast_to(baseline, Z.shape)
    except ValueError:
        raise ValueError(
            f"baseline of shape {baseline.shape} does not broadcast to Z's shape {Z.shape}."
        ) from None
    if not np.all(np.isfinite(baseline)):
        raise ValueError("baseline contains NaN or infinity; removed factors must be finite.")
    return np.ascontiguousarray(baseline)


def pair_contributions(Z, *, baseline=None, chunk_size=None, n_jobs=None, backend="auto",
                       tol=DEFAULT_TOL):
    """Per-pair Shapley contributions: the linear map from pair weights to Shapley values.

    Row ``p`` holds ``(z_pj - b_pj) * integral_0^1 prod_{i != j} ((1 - t) b_pi + t z_pi) dt``,
    so that ``shapley_values(Z, weights) == weights @ pair_contributions(Z)`` for every
    ``weights``. Compute it once when the same factors are re-weighted many times
    (permutation tests).

    Parameters
    ----------
    Z : array-like of shape (n_pairs, n_features)
        Kernel factors ``z_pj = k_j(a_pj, b_pj)``; any finite real numbers.
    baseline : array-like broadcastable to Z's shape, default=None
        The factor of a removed feature (see :func:`shapley_values`); 1 when None.
    chunk_size : int, default=None
        Pairs per task. By default chosen so that one task's temporaries stay near 2 MiB.
    n_jobs : int, default=None
        Parallel tasks through :mod:`joblib` (threads; the kernels release the GIL).
    backend : {"auto", "numba", "numpy"}, default="auto"
        "numba" runs the compiled kernel, "numpy" the vectorised reference it is tested
        against; "auto" takes the compiled kernel when numba is importable.
    tol : float, default=2**-53
        Proven bound on the quadrature error of each integral (see the user guide, "The
        removal game"):
        each pair gets the fewest Gauss-Legendre nodes whose bound is below ``tol``, at most
        ceil(d / 2), where the rule is exact. Kernels that are wide relative to the data
        (``S = sum_j |1 - z_j|`` of a few units) need about 10 nodes whatever d is, so the cost
        per pair is linear in d. The default is the unit roundoff: the values agree with
        the exact rule to rounding. ``tol=0`` uses ceil(d / 2) nodes everywhere.

    Returns
    -------
    contributions : ndarray of shape (n_pairs, n_features)

    Examples
    --------
    >>> import numpy as np
    >>> from pkex_select import pair_contributions
    >>> C = pair_contributions(np.array([[0.5, 0.2], [1.0, 0.0]]))
    >>> C.round(12)
    array([[-0.3, -0.6],
           [ 0. , -1. ]])
    >>> np.array([2.0, -1.0]) @ C
    array([-0.6, -0.2])
    """
    Z = as_factors(Z)
    if Z.ndim != 2:
        raise ValueError(f"Z must have shape (n_pairs, n_features); got {Z.shape}.")
    check_options(backend, tol)
    base = as_baseline(baseline, Z)
    slices = row_slices(Z.shape[0], _row_bytes(Z.shape[1], 1), chunk_size, n_jobs)
    parts = list(thread_pool(*Z.shape, n_jobs)(
        delayed(_contributions)(Z[sl], backend, tol, None if base is None else base[sl])
        for sl in slices
    ))
    return np.concatenate(parts, axis=0) if parts else np.zeros((0, Z.shape[1]))


def _contributions(Z, backend, tol=DEFAULT_TOL, base=None):
    return (Z - (1.0 if base is None else base)) * _loo_integrals(Z, backend, tol, base)


def weighted_contributions(Z, weights, *, baseline=None, backend="auto", tol=DEFAULT_TOL):
    """Shapley values of one block of pairs under several weightings, in one task.

    The primitive the streamed HSIC and MMD games are built from: ``weights @ C`` with ``C``
    the :func:`pair_contributions` of the block, computed without copies of ``Z`` and
    without parallelism (callers run blocks in parallel).

    Parameters
    ----------
    Z : ndarray of shape (n_pairs, n_features)
        Finite kernel factors of the block (not validated: callers build them).
    weights : ndarray of shape (n_weightings, n_pairs)
    baseline : ndarray of shape (n_pairs, n_features), default=None
        Factors of removed features (not validated); 1 when None.
    backend : {"auto", "numba", "numpy"}, default="auto"
    tol : float, default=2**-53
        See :func:`pair_contributions`.

    Returns
    -------
    values : ndarray of shape (n_weightings, n_features)
    """
    return weights @ _contributions(Z, backend, tol, baseline)


def shapley_values(Z, weights, *, baseline=None, chunk_size=None, n_jobs=None, backend="auto",
                   tol=DEFAULT_TOL):
    """Exact Shapley values of the product-kernel pair game.

    The game is ``v(S) = sum_p w_p prod_{j in S} Z[p, j] prod_{j not in S} B[p, j]``: removing
    feature ``j`` replaces its kernel factor by the baseline ``B[p, j]``, which is 1 (an
    infinite bandwidth: the "baseline" value function) unless given. The observational value
    function puts the factor's mean over background data there instead. The values satisfy
    ``values.sum(-1) == v(all) - v(empty)`` up to rounding, for any number of features.

    Parameters
    ----------
    Z : array-like of shape (n_pairs, n_features) or (n_points, n_pairs, n_features)
        Kernel factors; any finite real numbers (zeros and negatives included).
    weights : array-like of shape Z.shape[:-1] or Z.shape[:-1] + (n_outputs,)
        Pair weights ``w_p``; a trailing axis evaluates several games on the same factors.
    baseline : array-like broadcastable to Z's shape, default=None
        The factor of a removed feature; any finite real numbers. The quadrature error bound
        (``tol``) is proven for baselines in [-1, 1]; larger ones use the exact rule.
    chunk_size : int, default=None
        Rows of factors per task (pairs of all points flattened). By default chosen so that
        one task's temporaries stay near 2 MiB, whatever the number of pairs.
    n_jobs : int, default=None
        Parallel tasks through :mod:`joblib` (threads; the kernels release the GIL). Use
        ``joblib.parallel_config`` to pick another backend such as Dask.
    backend : {"auto", "numba", "numpy"}, default="auto"
        See :func:`pair_contributions`.
    tol : float, default=2**-53
        Bound on the quadrature error of each integral; see :func:`pair_contributions`.

    Returns
    -------
    values : ndarray
        Shape (n_features,) for 2-D ``Z`` or (n_points, n_features) for 3-D ``Z``, with a
        trailing (n_outputs,) axis when ``weights`` has one.

    See Also
    --------
    pair_contributions : The same values as a linear map of the weights.

    Examples
    --------
    A single pair: ``v(S) = 2 * prod_{j in S} z_j`` with ``z = (0.5, 0.2)``.

    >>> import numpy as np
    >>> from pkex_select import shapley_values
    >>> phi = shapley_values(np.array([[0.5, 0.2]]), np.array([2.0]))
    >>> phi
    array([-0.6, -1.2])
    >>> float(phi.sum())  # v(all) - v(empty) = 2 * 0.1 - 2
    -1.8
    """
    Z = as_factors(Z)
    check_options(backend, tol)
    weight_matrix, single_output = as_weight_matrix(weights, Z)
    values = solve_values(Z, weight_matrix, as_baseline(baseline, Z), chunk_size=chunk_size,
                          n_jobs=n_jobs, backend=backend, tol=tol)
    return values[..., 0] if single_output else values


def as_weight_matrix(weights, Z):
    """Validated weights as a (n_rows, n_outputs) matrix, and whether there is one output."""
    weights = np.asarray(weights, dtype=np.float64)
    pair_shape = Z.shape[:-1]
    if weights.shape == pair_shape:
        weight_matrix = weights.reshape(-1, 1)
    elif weights.ndim == Z.ndim and weights.shape[:-1] == pair_shape:
        weight_matrix = weights.reshape(-1, weights.shape[-1])
    else:
        raise ValueError(
            f"weights must have shape {pair_shape} or {pair_shape} + (n_outputs,) to match "
            f"Z of shape {Z.shape}; got {weights.shape}."
        )
    if not np.all(np.isfinite(weight_matrix)):
        raise ValueError("weights contain NaN or infinity.")
    return weight_matrix, weights.shape == pair_shape


def solve_values(Z, weight_matrix, base, *, chunk_size=None, n_jobs=None, backend="auto",
                 tol=DEFAULT_TOL):
    """:func:`shapley_values` of validated inputs: values (Z.shape[:-2] + (d, n_outputs))."""
    n_features = Z.shape[-1]
    n_outputs = weight_matrix.shape[1]
    n_pairs = Z.shape[-2]
    n_points = 1 if Z.ndim == 2 else Z.shape[0]
    factors = Z.reshape(-1, n_features)
    base = None if base is None else base.reshape(-1, n_features)
    slices = row_slices(factors.shape[0], _row_bytes(n_features, n_outputs), chunk_size,
                        n_jobs)

    def task(sl):
        contrib = _contributions(factors[sl], backend, tol, None if base is None else base[sl])
        # Rows of one task may span several points: each point's segment is one product.
        point_of_row = np.arange(sl.start, sl.start + contrib.shape[0]) // n_pairs
        bounds = list(np.flatnonzero(np.diff(point_of_row, prepend=-1))) + [len(contrib)]
        task_weights = weight_matrix[sl]
        partial = np.stack([contrib[a:b].T @ task_weights[a:b]
                            for a, b in zip(bounds[:-1], bounds[1:])])
        return point_of_row[0], partial

    values = np.zeros((n_points, n_features, n_outputs))
    for first, partial in thread_pool(*factors.shape, n_jobs)(
        delayed(task)(sl) for sl in slices
    ):
        values[first : first + partial.shape[0]] += partial
    return values[0] if Z.ndim == 2 else values
