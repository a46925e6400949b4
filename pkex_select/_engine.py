"""Exact Shapley values of the product-kernel pair game: validation, the choice of path, the driver.

The game is ``v(S) = sum_p w_p prod_{j in S} z_pj prod_{j not in S} r_pj`` (docs/design.md,
section 1): removing feature j replaces its kernel factor by the removed factor ``r_pj``,
which is 1 (an infinite bandwidth) unless given. Its Shapley value is

    phi_j = sum_p w_p (z_pj - r_pj) I_pj,
    I_pj = integral_0^1 prod_{i != j} ((1 - t) r_pi + t z_pi) dt,

because the Shapley weight q! (d-1-q)! / d! is the Beta integral of t^q (1-t)^(d-1-q). The
integrand is a polynomial of degree d - 1 in t, so Gauss-Legendre quadrature with ceil(d / 2)
nodes on [0, 1] evaluates it exactly; :mod:`._quadrature` proves when fewer nodes, or the
series form, are within ``tol``, and :mod:`._integrals` computes the integrals by each path.
Here :func:`plan_integrals` chooses the path of a chunk of pairs (an :class:`IntegralPlan`
that tests can ask), and the public functions validate, cut the pairs into tasks and sum.

This module knows nothing about models, HSIC or MMD: it maps factors and weights to values.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import lru_cache
from numbers import Real

import numpy as np
from numpy.typing import ArrayLike

from . import _integrals
from ._quadrature import (
    DEFAULT_TOL,
    deviation_limits,
    exact_node_count,
    gauss_rule,
    node_counts,
    series_rule,
)
from ._scheduling import row_slices, run_tasks

__all__ = [
    "adaptive_deviations",
    "as_factors",
    "as_removed_factors",
    "as_weight_matrix",
    "check_options",
    "contributions",
    "IntegralPlan",
    "integrals_with_rule",
    "integrate",
    "loo_integrals",
    "order_two_contributions",
    "pair_contributions",
    "plan_integrals",
    "point_rules",
    "point_values",
    "renamed_baseline",
    "shapley_values",
    "solve_values",
    "UNSET",
    "weighted_contributions",
]

# The "grouped" path cuts the pairs, sorted by node count, into groups of this many, each
# integrated with its largest count: a few calls of the kernel per chunk instead of one per
# count, for at most a few nodes more than each pair needs.
_GROUP_PAIRS = 64
# Up to this many exact nodes (d <= 16) the bound saves too little to pay for itself.
_MIN_ADAPTIVE_NODES = 8
# Below this many multiply-adds (rows * nodes * d) the bound's bookkeeping (about 0.1 ms a
# chunk) costs more than the nodes it saves: the model game's chunks of about 3000 pairs at
# d = 20 (6.5 x 10^5) save a third of their nodes.
_MIN_ADAPTIVE_WORK = 2e5
# The series path runs when its nodes plus terms are at most this many times the quadrature
# path's nodes (measured: one series node or term costs about a tenth of a quadrature node).
_SERIES_COST_RATIO = 4.0
# What grouping pairs by node count costs, in nodes per pair (measured: sort, gather, scatter).
_GATHER_NODES = 2
# Pairs of a chunk whose deviations are looked at before all of them (plan_integrals).
_PROBE_PAIRS = 32
_BACKENDS = ("auto", "numba", "numpy")


# ------------------------------------------------------------------------------ the plan


@dataclass(frozen=True)
class IntegralPlan:
    """How the integrals of a chunk of pairs are computed.

    Attributes
    ----------
    path : {"exact", "one rule", "grouped", "series"}
        "exact": ceil(d / 2) nodes for every pair. "one rule": fewer nodes, the same for every
        pair (the counts hardly differ). "grouped": pairs sorted by the nodes their bound
        needs, in groups of the compiled kernel's width. "series": the series form (factors
        near 1, removed factors 1).
    rule : tuple of ndarray or None
        (nodes, 1 - nodes, weights) of the "exact", "one rule" and "series" paths.
    n_terms : int
        Terms of the series (0 on the other paths).
    groups : tuple of (ndarray, int)
        "grouped" only: the rows of each group and its node count.
    """

    path: str
    rule: tuple | None = None
    n_terms: int = 0
    groups: tuple = ()


def _exact_plan(n_features):
    return IntegralPlan("exact", gauss_rule(exact_node_count(n_features)))


def _deviations(Z, removed, backend):
    if backend != "numpy" and _integrals.NUMBA:
        return _integrals.deviations_numba(Z, removed)
    return _integrals.deviations_numpy(Z, removed)


def adaptive_deviations(Z, removed, backend="auto"):
    """``S = sum_i |z_i - r_i|`` of each pair, or None where the bound does not apply.

    The bound of :func:`._quadrature.node_counts` needs |r_i| <= 1 (then the coefficients of
    ``prod_i (r_i + t (z_i - r_i))`` over n features are at most ``C(n, q) (S / n)^q``):
    kernel means and the default removed factor 1 qualify.
    """
    return _deviations(Z, removed, backend)[0] if _bound_applies(removed) else None


def _bound_applies(removed):
    """Whether the node bound holds: removed factors (1 when None) of magnitude at most 1."""
    return removed is None or np.abs(removed).max(initial=0.0) <= 1.0


def _saves_enough(counts, cap):
    """Whether grouping pairs by node count (about two nodes per pair) pays for itself."""
    return counts.sum() + _GATHER_NODES * counts.size < 0.9 * cap * counts.size


def plan_integrals(Z, removed=None, backend="auto", tol=DEFAULT_TOL):
    """The path by which the integrals of the pairs ``Z`` are computed within ``tol``.

    Parameters
    ----------
    Z : ndarray of shape (n_pairs, n_features)
    removed : ndarray of shape (n_pairs, n_features) or None
        The removed factors; 1 when None.
    backend : {"auto", "numba", "numpy"}, default="auto"
        Only which kernel measures the deviations: the plan is the same for both.
    tol : float, default=2**-53

    Returns
    -------
    IntegralPlan
    """
    n_rows, n_features = Z.shape
    cap = exact_node_count(n_features)
    if tol <= 0 or cap <= _MIN_ADAPTIVE_NODES or n_rows * cap * n_features < _MIN_ADAPTIVE_WORK:
        return _exact_plan(n_features)
    if not _bound_applies(removed):
        return _exact_plan(n_features)
    # A few pairs first: where none of them could take fewer nodes (narrow kernels), the
    # deviation pass over every pair would cost without saving.
    probe = slice(None, None, max(1, n_rows // _PROBE_PAIRS))
    probe_removed = None if removed is None else np.ascontiguousarray(removed[probe])
    probe_deviations = _deviations(np.ascontiguousarray(Z[probe]), probe_removed, backend)[0]
    if node_counts(probe_deviations, n_features, tol).min() == cap:
        return _exact_plan(n_features)
    deviations, largest, above = _deviations(Z, removed, backend)
    counts = node_counts(deviations, n_features, tol)
    if not _saves_enough(counts, cap):  # narrow kernels: the exact rule at once
        return _exact_plan(n_features)
    most_nodes = int(counts.max())
    if removed is None:
        series = series_rule(float(deviations.max()), largest, above, n_features, tol)
        if series is not None and (
            series[0][0].size + series[1] <= _SERIES_COST_RATIO * most_nodes
        ):
            return IntegralPlan("series", series[0], series[1])
    if most_nodes * n_rows <= counts.sum() + _GATHER_NODES * n_rows:
        # The counts hardly differ (wide kernels): one rule for all, no gathering.
        return IntegralPlan("one rule", gauss_rule(most_nodes))
    # Pairs sorted by count, in groups, each with the largest count among its pairs.
    order = np.argsort(counts, kind="stable")
    group_counts = np.maximum.reduceat(counts[order], np.arange(0, n_rows, _GROUP_PAIRS))
    if not _saves_enough(group_counts, cap):
        return _exact_plan(n_features)
    group_of_row = np.repeat(group_counts, _GROUP_PAIRS)[:n_rows]
    starts = list(np.flatnonzero(np.diff(group_of_row, prepend=-1))) + [n_rows]
    groups = tuple(
        (order[start:stop], int(group_of_row[start]))
        for start, stop in zip(starts[:-1], starts[1:])
    )
    return IntegralPlan("grouped", groups=groups)


def integrals_with_rule(Z, removed, rule, backend="auto"):
    """``I_pj`` (see the module docstring) by the quadrature ``rule`` = (t, 1 - t, weights)."""
    if backend == "numpy" or not _integrals.NUMBA:
        return _integrals.loo_integrals_numpy(Z, removed, *rule)
    return _integrals.loo_integrals_numba(Z, removed, *rule)


def integrate(plan, Z, removed=None, backend="auto"):
    """``I_pj`` of the pairs ``Z`` by the path of ``plan`` (:func:`plan_integrals`)."""
    if plan.path == "series":
        nodes, _, weights = plan.rule
        if backend == "numpy" or not _integrals.NUMBA:
            return _integrals.series_integrals_numpy(Z, nodes, weights, plan.n_terms)
        return _integrals.series_integrals_numba(Z, nodes, weights, plan.n_terms)
    if plan.path != "grouped":
        return integrals_with_rule(Z, removed, plan.rule, backend)
    integrals = np.empty(Z.shape)
    for rows, n_nodes in plan.groups:
        integrals[rows] = integrals_with_rule(
            Z[rows], None if removed is None else removed[rows], gauss_rule(n_nodes), backend
        )
    return integrals


def loo_integrals(Z, removed=None, backend="auto", tol=DEFAULT_TOL):
    """``I_pj`` with as few nodes (or terms) as the proven bound allows within ``tol``."""
    if Z.shape[-1] == 1:
        return np.ones_like(Z)  # the product over the other players is empty
    return integrate(plan_integrals(Z, removed, backend, tol), Z, removed, backend)


def contributions(Z, removed=None, backend="auto", tol=DEFAULT_TOL):
    """``(z_pj - r_pj) I_pj``: the per-pair Shapley contributions of a chunk of pairs."""
    if removed is not None:
        removed = np.ascontiguousarray(removed)  # a chunk of a broadcast view
    return (Z - (1.0 if removed is None else removed)) * loo_integrals(Z, removed, backend, tol)


def order_two_contributions(Z, out=None, backend="auto"):
    """The per-pair Shapley contributions of the game truncated at pairwise interactions.

    With ``u = z - 1`` the pair game ``prod_{j in S} (1 + u_j)`` has the Moebius coefficient
    ``prod_{j in T} u_j`` for each T; keeping those with ``|T| <= 2`` leaves the game
    ``1 + sum_{j in S} u_j + sum_{j < l in S} u_j u_l``, whose Shapley value is
    ``u_j (1 + sum_{l != j} u_l / 2)``: the first-order Taylor term of ``I_pj``, linear in d.
    Written into ``out`` (a new array when None), which is returned.
    """
    if out is None:
        out = np.empty_like(Z)
    if backend != "numpy" and _integrals.NUMBA:
        _integrals.order_two_numba(Z, out)
    else:
        _integrals.order_two_numpy(Z, out)
    return out


# ---------------------------------------------------------------------------- validation


def check_options(backend, tol):
    if backend not in _BACKENDS:
        raise ValueError(f"backend must be one of {_BACKENDS}, got {backend!r}.")
    if backend == "numba" and not _integrals.NUMBA:
        raise ImportError("backend='numba' needs numba; install it or use backend='numpy'.")
    if not isinstance(tol, Real) or not 0 <= tol < 1:
        raise ValueError(f"tol must be a number in [0, 1), got {tol!r}.")


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


# The default of deprecated parameters: tells "not given" apart from None.
UNSET = object()


def renamed_baseline(removed_factors, baseline, function):
    """``removed_factors``, or the value of its deprecated name ``baseline`` with a warning."""
    if baseline is UNSET:
        return removed_factors
    warnings.warn(
        f"{function}(baseline=...) is deprecated since 0.2 and will be removed in 0.4; use "
        "removed_factors=... (the name 'baseline' is kept for the value function).",
        FutureWarning,
        stacklevel=3,
    )
    if removed_factors is not None:
        raise TypeError("Give removed_factors or its old name baseline, not both.")
    return baseline


def as_removed_factors(removed_factors, Z):
    """The removed factors as a float array of Z's shape (a broadcast view: removed
    factors given per point are not copied to every pair), or None for the default 1."""
    if removed_factors is None:
        return None
    removed = np.asarray(removed_factors, dtype=np.float64)
    try:
        removed = np.broadcast_to(removed, Z.shape)
    except ValueError:
        raise ValueError(
            f"removed_factors of shape {removed.shape} does not broadcast to Z's shape {Z.shape}."
        ) from None
    if not np.all(np.isfinite(removed)):
        raise ValueError("removed_factors contains NaN or infinity; they must be finite.")
    return removed


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


def _row_bytes(n_features, n_outputs):
    # Per row: its factors, the quadrature's prefix products and running sums, its
    # contributions and its weighted values, half of them alive at once.
    return 4 * n_features * (3 + n_outputs)


def _work(n_rows, n_features):
    return n_rows * n_features**2 / 2


# -------------------------------------------------------------------------- the functions


def pair_contributions(
    Z: ArrayLike,
    *,
    removed_factors: ArrayLike | None = None,
    chunk_size: int | None = None,
    n_jobs: int | None = None,
    backend: str = "auto",
    tol: float = DEFAULT_TOL,
    baseline=UNSET,
) -> np.ndarray:
    """Per-pair Shapley contributions: the linear map from pair weights to Shapley values.

    Row ``p`` holds ``(z_pj - r_pj) * integral_0^1 prod_{i != j} ((1 - t) r_pi + t z_pi) dt``,
    so that ``shapley_values(Z, weights) == weights @ pair_contributions(Z)`` for every
    ``weights``. Compute it once when the same factors are re-weighted many times
    (permutation tests).

    Parameters
    ----------
    Z : array-like of shape (n_pairs, n_features)
        Kernel factors ``z_pj = k_j(a_pj, b_pj)``; any finite real numbers.
    removed_factors : array-like broadcastable to Z's shape, default=None
        The factor a removed feature takes (see :func:`shapley_values`); 1 when None.
    chunk_size : int, default=None
        Pairs per task. By default chosen so that one task's temporaries stay near 2 MiB.
    n_jobs : int, default=None
        Parallel tasks on threads (the kernels release the GIL).
    backend : {"auto", "numba", "numpy"}, default="auto"
        "numba" runs the compiled kernels, "numpy" their vectorised twins they are tested
        against; "auto" takes the compiled kernels when numba is importable. Both take the
        same path (quadrature rule or series) for the same pairs.
    tol : float, default=2**-53
        Proven bound on the quadrature error of each integral (see the user guide, "The
        removal game"): each pair gets the fewest Gauss-Legendre nodes whose bound is below
        ``tol``, at most ceil(d / 2), where the rule is exact. Kernels that are wide relative
        to the data (``S = sum_j |1 - z_j|`` of a few units) need 7 to 10 nodes whatever d
        is, so the cost per pair is linear in d. The default is the unit roundoff: the values
        agree with the exact rule to rounding. ``tol=0`` uses ceil(d / 2) nodes everywhere.
    baseline : array-like, deprecated
        The old name of ``removed_factors``.

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
    removed_factors = renamed_baseline(removed_factors, baseline, "pair_contributions")
    Z = as_factors(Z)
    if Z.ndim != 2:
        raise ValueError(f"Z must have shape (n_pairs, n_features); got {Z.shape}.")
    check_options(backend, tol)
    removed = as_removed_factors(removed_factors, Z)
    slices = row_slices(Z.shape[0], _row_bytes(Z.shape[1], 1), chunk_size, n_jobs)

    def task(rows):
        return contributions(Z[rows], None if removed is None else removed[rows], backend, tol)

    parts = list(run_tasks(task, slices, n_jobs, work=_work(*Z.shape)))
    return np.concatenate(parts, axis=0) if parts else np.zeros((0, Z.shape[1]))


def weighted_contributions(Z, weights, *, removed=None, backend="auto", tol=DEFAULT_TOL):
    """Shapley values of one chunk of pairs under several weightings, in one task.

    The primitive the streamed HSIC and MMD games are built from: ``weights @ C`` with ``C``
    the :func:`pair_contributions` of the chunk, computed without copies of ``Z`` and
    without parallelism (callers run chunks in parallel).

    Parameters
    ----------
    Z : ndarray of shape (n_pairs, n_features)
        Finite kernel factors of the chunk (not validated: callers build them).
    weights : ndarray of shape (n_weightings, n_pairs)
    removed : ndarray of shape (n_pairs, n_features), default=None
        Removed factors (not validated); 1 when None.
    backend : {"auto", "numba", "numpy"}, default="auto"
    tol : float, default=2**-53
        See :func:`pair_contributions`.

    Returns
    -------
    values : ndarray of shape (n_weightings, n_features)
    """
    return weights @ contributions(Z, removed, backend, tol)


def shapley_values(
    Z: ArrayLike,
    weights: ArrayLike,
    *,
    removed_factors: ArrayLike | None = None,
    chunk_size: int | None = None,
    n_jobs: int | None = None,
    backend: str = "auto",
    tol: float = DEFAULT_TOL,
    baseline=UNSET,
) -> np.ndarray:
    """Exact Shapley values of the product-kernel pair game.

    The game is ``v(S) = sum_p w_p prod_{j in S} Z[p, j] prod_{j not in S} R[p, j]``:
    removing feature ``j`` replaces its kernel factor by the removed factor ``R[p, j]``,
    which is 1 (an infinite bandwidth: the "baseline" value function) unless given. The
    observational value function puts the factor's mean over background data there instead.
    The values satisfy ``values.sum(-1) == v(all) - v(empty)`` up to rounding, for any
    number of features.

    Parameters
    ----------
    Z : array-like of shape (n_pairs, n_features) or (n_points, n_pairs, n_features)
        Kernel factors; any finite real numbers (zeros and negatives included).
    weights : array-like of shape Z.shape[:-1] or Z.shape[:-1] + (n_outputs,)
        Pair weights ``w_p``; a trailing axis evaluates several games on the same factors.
    removed_factors : array-like broadcastable to Z's shape, default=None
        The factor a removed feature takes; any finite real numbers. The quadrature error
        bound (``tol``) is proven for removed factors in [-1, 1]; larger ones use the exact
        rule.
    chunk_size : int, default=None
        Rows of factors per task (pairs of all points flattened). By default chosen so that
        one task's temporaries stay near 2 MiB, whatever the number of pairs.
    n_jobs : int, default=None
        Parallel tasks on threads (the kernels release the GIL). Use
        ``joblib.parallel_config`` to pick another backend such as Dask.
    backend : {"auto", "numba", "numpy"}, default="auto"
        See :func:`pair_contributions`.
    tol : float, default=2**-53
        Bound on the quadrature error of each integral; see :func:`pair_contributions`.
    baseline : array-like, deprecated
        The old name of ``removed_factors``.

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
    removed_factors = renamed_baseline(removed_factors, baseline, "shapley_values")
    Z = as_factors(Z)
    check_options(backend, tol)
    weight_matrix, single_output = as_weight_matrix(weights, Z)
    values = solve_values(
        Z,
        weight_matrix,
        as_removed_factors(removed_factors, Z),
        chunk_size=chunk_size,
        n_jobs=n_jobs,
        backend=backend,
        tol=tol,
    )
    return values[..., 0] if single_output else values


def solve_values(
    Z, weight_matrix, removed, *, chunk_size=None, n_jobs=None, backend="auto", tol=DEFAULT_TOL
):
    """:func:`shapley_values` of validated inputs: values (Z.shape[:-2] + (d, n_outputs))."""
    n_features = Z.shape[-1]
    n_outputs = weight_matrix.shape[1]
    n_pairs = Z.shape[-2]
    n_points = 1 if Z.ndim == 2 else Z.shape[0]
    factors = Z.reshape(-1, n_features)
    slices = row_slices(factors.shape[0], _row_bytes(n_features, n_outputs), chunk_size, n_jobs)

    def task(rows):
        flat_rows = np.arange(rows.start, rows.start + factors[rows].shape[0])
        point_of_row = flat_rows // n_pairs
        if removed is None:
            chunk_removed = None
        elif Z.ndim == 2:
            chunk_removed = removed[rows]
        else:  # gathered from the (possibly broadcast) view, not reshaped: no full copy
            chunk_removed = removed[point_of_row, flat_rows % n_pairs]
        contrib = contributions(factors[rows], chunk_removed, backend, tol)
        # Rows of one task may span several points: each point's segment is one product.
        bounds = list(np.flatnonzero(np.diff(point_of_row, prepend=-1))) + [len(contrib)]
        task_weights = weight_matrix[rows]
        partial = np.stack(
            [contrib[a:b].T @ task_weights[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
        )
        return point_of_row[0], partial

    values = np.zeros((n_points, n_features, n_outputs))
    for first, partial in run_tasks(task, slices, n_jobs, work=_work(*factors.shape)):
        values[first : first + partial.shape[0]] += partial
    return values[0] if Z.ndim == 2 else values


@lru_cache(maxsize=32)
def point_rules(n_features, tol, bounded=True):
    """The rule tables of :func:`point_values`: row m - 1 of the first three holds the
    m-node Gauss rule (t, 1 - t, weights) padded to a common width, m = 1, ..., ceil(d / 2);
    then each row's width of node groups, and the deviation limits of :func:`node_counts`
    (-1 where the bound does not apply: ``bounded`` False, or ``tol`` 0)."""
    cap = exact_node_count(n_features)
    rules = [_integrals.padded_rule(*gauss_rule(m), cap + 3) for m in range(1, cap + 1)]
    tables = [np.array([rule[part] for rule in rules]) for part in range(4)]
    for table in tables:
        table.flags.writeable = False
    return (*tables, deviation_limits(n_features, tol if bounded else 0.0))


def point_values(Z, removed, weights, *, n_jobs=None, backend="auto", tol=DEFAULT_TOL):
    """Shapley values of each point's game in a kernel expansion whose pairs share their
    removed factors and weights over the points (a fitted model explained row by row).

    ``values[a, j, o] = sum_p weights[p, o] (Z[a, p, j] - removed[p, j]) I_apj``: the
    :func:`solve_values` of ``Z`` with ``removed`` and ``weights`` broadcast over the points,
    in one compiled pass per point (the per-chunk plan, gathers and products of the general
    path took half of the model game's explanation). Inputs are not validated.

    Parameters
    ----------
    Z : ndarray of shape (n_points, n_pairs, n_features)
    removed : ndarray of shape (n_pairs, n_features)
        Without removed factors (1) the general path's series form may be far cheaper.
    weights : ndarray of shape (n_pairs, n_outputs)
    n_jobs : int, default=None
        Threads sharing the points.
    backend : {"auto", "numba", "numpy"}, default="auto"
    tol : float, default=2**-53
        As in :func:`pair_contributions`: each pair takes the fewest nodes within ``tol``.

    Returns
    -------
    values : ndarray of shape (n_points, n_features, n_outputs)
    """
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    removed = np.ascontiguousarray(removed, dtype=np.float64)
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    rules = point_rules(Z.shape[2], float(tol), _bound_applies(removed))
    if backend == "numpy" or not _integrals.NUMBA:
        kernel = _integrals.point_values_numpy
    else:
        kernel = _integrals.point_values_numba
    slices = row_slices(Z.shape[0], 8 * Z.shape[1] * Z.shape[2], None, n_jobs)
    parts = run_tasks(
        lambda points: kernel(Z[points], removed, weights, *rules),
        slices,
        n_jobs,
        work=_work(Z.shape[0] * Z.shape[1], Z.shape[2]),
    )
    return np.concatenate(list(parts)) if slices else np.zeros((0, Z.shape[2], weights.shape[1]))
