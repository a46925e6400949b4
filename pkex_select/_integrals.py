"""The leave-one-out integrals of the pair game, each path compiled and in NumPy.

For a chunk of pairs with kernel factors ``Z`` (n_pairs, d) and removed factors ``R`` (the
factor a removed feature takes; None for the default 1), every function here computes

    I_pj = integral_0^1 prod_{i != j} ((1 - t) R_pi + t Z_pi) dt

by a rule it is given (:mod:`._quadrature` proves how many nodes or terms suffice;
:mod:`._engine` chooses the path). Each compiled kernel (numba, ``*_numba``) stands beside its
NumPy twin (``*_numpy``), which it is tested against; the compiled ones are None when numba
cannot be imported.

- :func:`loo_integrals_numpy` / ``loo_integrals_numba``: Gauss-Legendre quadrature with
  prefix and suffix products (no division: zero and negative factors are fine), O(m d) per
  pair for m nodes.
- :func:`point_values_numpy` / ``point_values_numba``: the Shapley values of each point of
  a kernel expansion whose pairs share their removed factors and weights (a fitted model
  explained row by row); compiled, one pass per point with each pair's fewest nodes.
- :func:`series_integrals_numpy` / ``series_integrals_numba``: the series form for factors
  near 1 (``R`` = 1 only), ``I_j = sum_r u_j^r M_r`` with moments ``M_r`` of the full
  product: O((m + R) d) per pair in register-bound loops.
- :func:`feature_products_numpy` / ``feature_products_numba``: the product over the last
  axis (the features) of a contiguous array, the joint kernel of each pair from its factors;
  NumPy's reduction along a short contiguous axis takes 6x as long (29 ms against 5 ms for
  1000 x 1000 pairs at d = 20).
- :func:`deviations_numpy` / ``deviations_numba``: one pass for what the plan needs, each
  pair's ``S = sum_j |Z_pj - R_pj|``, the largest ``|Z_pj - R_pj|`` and whether some factor
  exceeds its removed factor.
- :func:`order_two_numpy` / ``order_two_numba``: the game truncated at pairwise
  interactions needs no integral, ``u_j (1 + sum_{l != j} u_l / 2)`` with ``u = Z - 1``;
  compiled, one pass into the caller's array (NumPy's five passes and temporaries took 0.24 s
  of a 1.4 s tested fit).
"""

import numpy as np

from ._scheduling import TASK_BYTES

__all__ = [
    "compile_kernel",
    "NUMBA",
    "deviations_numba",
    "deviations_numpy",
    "feature_products",
    "feature_products_numba",
    "feature_products_numpy",
    "loo_integrals_numba",
    "loo_integrals_numpy",
    "order_two_numba",
    "order_two_numpy",
    "padded_rule",
    "point_values_numba",
    "point_values_numpy",
    "series_integrals_numba",
    "series_integrals_numpy",
]


def loo_integrals_numpy(Z, removed, nodes, complements, node_weights):
    """``I_pj`` by the rule (nodes, 1 - nodes, weights), in NumPy tiles (rows, nodes, d)."""
    n_rows, n_features = Z.shape
    removed = 1.0 if removed is None else removed[:, None, :]
    integrals = np.zeros((n_rows, n_features))
    step = max(1, 2 * TASK_BYTES // (8 * max(n_rows, 1) * n_features * 3))
    for start in range(0, nodes.size, step):
        tile = slice(start, start + step)
        factors = complements[tile, None] * removed + nodes[tile, None] * Z[:, None, :]
        loo = np.ones_like(factors)
        np.cumprod(factors[:, :, :-1], axis=2, out=loo[:, :, 1:])
        loo[:, :, :-1] *= np.cumprod(factors[:, :, :0:-1], axis=2)[:, :, ::-1]
        integrals += np.matmul(node_weights[tile], loo)
    return integrals


def series_integrals_numpy(Z, nodes, node_weights, n_terms):
    """``I_pj = sum_{r < n_terms} u_pj^r M_pr`` (u = 1 - z, removed factors 1) in NumPy.

    ``M_pr = sum_k w_k t_k^r prod_i (1 - t_k u_pi)``; see :func:`._quadrature.series_rule`.
    """
    u = 1.0 - Z
    step = max(1, TASK_BYTES // (8 * nodes.size * Z.shape[1]))
    products = (
        np.concatenate(
            [
                np.prod(1.0 - nodes[:, None] * u[start : start + step, None, :], axis=2)
                for start in range(0, Z.shape[0], step)
            ]
        )
        if Z.shape[0]
        else np.zeros((0, nodes.size))
    )
    moments = (products * node_weights) @ nodes[:, None] ** np.arange(n_terms)
    integrals = np.repeat(moments[:, -1:], Z.shape[1], axis=1)
    for r in range(n_terms - 2, -1, -1):
        integrals *= u
        integrals += moments[:, r : r + 1]
    return integrals


def feature_products_numpy(Z):
    """``np.prod(Z, axis=-1)``."""
    return np.prod(Z, axis=-1)


def feature_products(Z):
    """The product over the last axis of ``Z``: compiled for a C-contiguous float64 array,
    :func:`feature_products_numpy` otherwise (or without numba)."""
    if NUMBA and Z.dtype == np.float64 and Z.flags.c_contiguous and Z.ndim > 0 and Z.size > 0:
        return feature_products_numba(Z.reshape(-1, Z.shape[-1])).reshape(Z.shape[:-1])
    return feature_products_numpy(Z)


def deviations_numpy(Z, removed):
    """Each pair's ``sum_j |Z_pj - R_pj|``, the largest ``|Z_pj - R_pj|``, and whether some
    ``Z_pj > R_pj``."""
    differences = Z - (1.0 if removed is None else removed)
    magnitudes = np.abs(differences)
    return (
        magnitudes.sum(axis=1),
        float(magnitudes.max(initial=0.0)),
        bool((differences > 0).any()),
    )


def order_two_numpy(Z, out):
    """Write ``u_j (1 + sum_{l != j} u_l / 2)``, ``u = Z - 1``, into ``out`` (same shape)."""
    deviations = Z - 1.0
    others = deviations.sum(axis=1, keepdims=True) - deviations
    np.multiply(deviations, 1.0 + others / 2, out=out)


# ----------------------------------------------------------------------- compiled twins
# Written as plain Python over scalars (numba compiles them), each pair along its features.


def _sweep_kernel(z, r, t, s, w, width, integrals, factors, prefix):
    """The leave-one-out integrals of one pair (factors ``z``, removed factors ``r`` or None
    for 1) by the rule ``t``, ``s`` = 1 - t, ``w`` padded to ``width`` nodes, into
    ``integrals``; ``factors`` and ``prefix`` are (4, d) scratch.

    Nodes are taken four at a time (two for the last ones), each with its own running
    product in a register: a forward sweep stores the prefix products, a backward sweep
    carries the suffix products with the weights folded in. The four products are
    independent, so the sweeps run at the multiplier's throughput, not its latency (1.1-1.7x
    the speed of sweeping 64 pairs per node together, which must transpose them first). The
    nodes are padded to the groups with t = 0 and weight 0 (:func:`padded_rule`). numba
    prunes the ``r is None`` branches at compile time.
    """
    n_features = z.size
    for j in range(n_features):
        integrals[j] = 0.0
    k = 0
    while k < width:
        if width - k >= 4:
            a0 = a1 = a2 = a3 = 1.0
            for j in range(n_features):
                zj = z[j]
                rj = 1.0 if r is None else r[j]
                f0 = s[k] * rj + t[k] * zj
                f1 = s[k + 1] * rj + t[k + 1] * zj
                f2 = s[k + 2] * rj + t[k + 2] * zj
                f3 = s[k + 3] * rj + t[k + 3] * zj
                factors[0, j], factors[1, j], factors[2, j], factors[3, j] = f0, f1, f2, f3
                prefix[0, j], prefix[1, j], prefix[2, j], prefix[3, j] = a0, a1, a2, a3
                a0 *= f0
                a1 *= f1
                a2 *= f2
                a3 *= f3
            a0, a1, a2, a3 = w[k], w[k + 1], w[k + 2], w[k + 3]
            for j in range(n_features - 1, -1, -1):
                integrals[j] += prefix[0, j] * a0 + prefix[1, j] * a1
                integrals[j] += prefix[2, j] * a2 + prefix[3, j] * a3
                a0 *= factors[0, j]
                a1 *= factors[1, j]
                a2 *= factors[2, j]
                a3 *= factors[3, j]
            k += 4
        else:
            a0 = a1 = 1.0
            for j in range(n_features):
                zj = z[j]
                rj = 1.0 if r is None else r[j]
                f0 = s[k] * rj + t[k] * zj
                f1 = s[k + 1] * rj + t[k + 1] * zj
                factors[0, j], factors[1, j] = f0, f1
                prefix[0, j], prefix[1, j] = a0, a1
                a0 *= f0
                a1 *= f1
            a0, a1 = w[k], w[k + 1]
            for j in range(n_features - 1, -1, -1):
                integrals[j] += prefix[0, j] * a0 + prefix[1, j] * a1
                a0 *= factors[0, j]
                a1 *= factors[1, j]
            k += 2


def padded_rule(nodes, complements, node_weights, width=0):
    """A quadrature rule padded with t = 0 and weight 0 to the node groups of
    :func:`_sweep_kernel` (a multiple of four nodes where that leaves one node over, else of
    two), and on to ``width``: t, 1 - t, the weights, and the width of the groups."""
    n_nodes = nodes.size
    groups = (n_nodes + 3) // 4 * 4 if n_nodes % 4 == 3 else (n_nodes + 1) // 2 * 2
    size = max(groups, width)
    t = np.zeros(size)
    s = np.ones(size)
    w = np.zeros(size)
    t[:n_nodes] = nodes
    s[:n_nodes] = complements
    w[:n_nodes] = node_weights
    return t, s, w, groups


def _loo_integrals_kernel(Z, removed, nodes, complements, node_weights):
    """Compiled twin of :func:`loo_integrals_numpy`, one pair at a time
    (:func:`_sweep_kernel`)."""
    n_rows, n_features = Z.shape
    t, s, w, width = _padded_rule(nodes, complements, node_weights, 0)
    integrals = np.empty((n_rows, n_features))
    factors = np.empty((4, n_features))
    prefix = np.empty((4, n_features))
    for p in range(n_rows):
        # Two calls, not an optional argument: numba < 0.60 cannot type one.
        if removed is None:
            _sweep(Z[p], None, t, s, w, width, integrals[p], factors, prefix)
        else:
            _sweep(Z[p], removed[p], t, s, w, width, integrals[p], factors, prefix)
    return integrals


def point_values_numpy(Z, removed, weights, nodes, complements, node_weights, widths, limits):
    """Shapley values of each point's game in an expansion ``f(x) = sum_p w_p k(x, x_p)``,
    ``values[a, j, o] = sum_p weights[p, o] (Z[a, p, j] - removed[p, j]) I_apj``.

    ``Z`` (n_points, n_pairs, d), ``removed`` (n_pairs, d), ``weights`` (n_pairs,
    n_outputs); the rule tables and ``limits`` as :func:`._engine.point_rules` builds them.
    Every pair takes the last (exact) rule; its compiled twin takes as few nodes as
    ``limits`` allow, which agree within the tolerance they were built for.
    """
    exact = nodes[-1], complements[-1], node_weights[-1]
    values = np.empty((Z.shape[0], Z.shape[2], weights.shape[1]))
    for a, point in enumerate(Z):
        contributions = (point - removed) * loo_integrals_numpy(point, removed, *exact)
        values[a] = contributions.T @ weights
    return values


def _point_values_kernel(Z, removed, weights, nodes, complements, node_weights, widths, limits):
    """Compiled twin of :func:`point_values_numpy`, in one pass over each point's pairs.

    Each pair takes the fewest nodes its deviation ``S = sum_j |z_j - r_j|`` allows: m
    nodes where ``S <= limits[m - 1]`` (:func:`._quadrature.deviation_limits`), row m - 1
    of the rule tables; the sweep (:func:`_sweep_kernel`), its contributions and their
    weighted sum follow without temporaries.
    """
    n_points, n_pairs, n_features = Z.shape
    n_outputs = weights.shape[1]
    most = limits.size
    values = np.zeros((n_points, n_features, n_outputs))
    integrals = np.empty(n_features)
    factors = np.empty((4, n_features))
    prefix = np.empty((4, n_features))
    for a in range(n_points):
        for p in range(n_pairs):
            z, r = Z[a, p], removed[p]
            deviation = 0.0
            for j in range(n_features):
                deviation += abs(z[j] - r[j])
            m = 1
            while m < most and limits[m - 1] < deviation:
                m += 1
            m -= 1
            t, s, w = nodes[m], complements[m], node_weights[m]
            _sweep(z, r, t, s, w, widths[m], integrals, factors, prefix)
            for j in range(n_features):
                contribution = (z[j] - r[j]) * integrals[j]
                for o in range(n_outputs):
                    values[a, j, o] += contribution * weights[p, o]
    return values


def _series_integrals_kernel(Z, nodes, node_weights, n_terms):
    """Compiled twin of :func:`series_integrals_numpy`, one pair at a time.

    Every loop runs along the features of one pair: the products and Horner steps vectorise.
    """
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


def _feature_products_kernel(Z):
    """Compiled twin of :func:`feature_products_numpy` for a 2-D array."""
    products = np.empty(Z.shape[0])
    for p in range(Z.shape[0]):
        product = 1.0
        for j in range(Z.shape[1]):
            product *= Z[p, j]
        products[p] = product
    return products


def _order_two_kernel(Z, out):
    """Compiled twin of :func:`order_two_numpy`."""
    for p in range(Z.shape[0]):
        total = 0.0
        for j in range(Z.shape[1]):
            total += Z[p, j] - 1.0
        for j in range(Z.shape[1]):
            deviation = Z[p, j] - 1.0
            out[p, j] = deviation * (1.0 + (total - deviation) / 2)


def _deviations_kernel(Z, removed):
    """Compiled twin of :func:`deviations_numpy`: one pass, no temporaries."""
    result = np.empty(Z.shape[0])
    largest = 0.0
    above = False
    for p in range(Z.shape[0]):
        total = 0.0
        for j in range(Z.shape[1]):
            difference = Z[p, j] - (1.0 if removed is None else removed[p, j])
            total += abs(difference)
            largest = max(largest, abs(difference))
            above = above or difference > 0.0
        result[p] = total
    return result, largest, above


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
    # numba < 0.62 names the locators with a leading underscore.
    locators = [
        getattr(caching, name, None) or getattr(caching, "_" + name, None)
        for name in ("UserProvidedCacheLocator", "UserWideCacheLocator")
    ]
    if None in locators or not hasattr(caching, "CompileResultCacheImpl"):
        return dispatcher  # an unknown numba: compile on each run rather than cache in tree

    class OutOfTreeImpl(caching.CompileResultCacheImpl):
        _locator_classes = locators

    class OutOfTreeCache(caching.FunctionCache):
        _impl_class = OutOfTreeImpl

    try:
        dispatcher._cache = OutOfTreeCache(dispatcher.py_func)
    except RuntimeError:  # no writable cache directory: compile on each run
        pass
    return dispatcher


def compile_kernel(function, inline="never", fastmath=("reassoc", "contract")):
    """``function`` compiled by numba (no GIL, reassociation allowed), cached out of tree;
    ``inline="always"`` for one that other kernels call; ``fastmath=()`` for one that must
    round as NumPy does."""
    import numba

    return _cache_outside_the_package(
        numba.njit(nogil=True, fastmath=set(fastmath), inline=inline)(function)
    )


try:
    import numba  # noqa: F401
except ImportError:  # pragma: no cover - numba is a core dependency
    import warnings

    warnings.warn(
        "numba cannot be imported, so pkex-select runs its NumPy kernels, which are 3-4x "
        "slower (the results agree within tol). pip install numba to get the compiled ones.",
        UserWarning,
        stacklevel=2,
    )
    NUMBA = False
    loo_integrals_numba = series_integrals_numba = deviations_numba = None
    feature_products_numba = point_values_numba = order_two_numba = None
else:
    NUMBA = True
    _sweep = compile_kernel(_sweep_kernel, inline="always")
    _padded_rule = compile_kernel(padded_rule, inline="always")
    loo_integrals_numba = compile_kernel(_loo_integrals_kernel)
    point_values_numba = compile_kernel(_point_values_kernel)
    series_integrals_numba = compile_kernel(_series_integrals_kernel)
    deviations_numba = compile_kernel(_deviations_kernel)
    feature_products_numba = compile_kernel(_feature_products_kernel)
    order_two_numba = compile_kernel(_order_two_kernel)
