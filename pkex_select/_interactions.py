"""Exact interaction indices of the product-kernel pair game.

For one pair, the game ``v(S) = prod_{j in S} z_j prod_{j not in S} b_j`` has the Moebius
coefficients ``m(T) = prod_{j in T} c_j prod_{j not in T} b_j`` with ``c = z - b``. Every
cardinal interaction index of a set T is ``sum_{R disjoint from T} lambda(|R|) m(T + R)``, and
when ``lambda(r) = integral t^r dW(t)`` that sum is one integral:

    I(T) = prod_{j in T} c_j  integral  prod_{l not in T} ((1 - t) b_l + t z_l)  dW(t).

Shapley interaction (SII): dW = dt on [0, 1]; Shapley-Taylor (STII, top order 2): 2 (1 - t) dt;
Banzhaf (BII): a point mass at 1/2; Moebius: a point mass at 0. Gauss-Legendre with ceil(d / 2)
nodes is exact for the first two, and the bound of :func:`pkex_select._engine.node_counts`
gives fewer nodes where the factors allow.

Pairwise values of a chunk of pairs are one matrix product per node: with ``f = (1 - t) b + t z``
and the leave-one-out products ``L_i = prod_{l != i} f_l``, the leave-two-out product is
``L_i / f_j``, so ``sum_p w_p c_pi c_pj prod_{l != i, j} f_pl = (c L)^T diag(w) (c / f)``. The
division is exact to rounding unless some ``f`` is (nearly) zero; those pairs take the
division-free route, leave-two-out products from prefix and suffix products, O(d^2) per pair.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ._engine import (
    UNSET,
    adaptive_deviations,
    as_factors,
    as_removed_factors,
    as_weight_matrix,
    check_options,
    integrals_with_rule,
    order_two_contributions,
    renamed_baseline,
    solve_values,
)
from ._quadrature import DEFAULT_TOL, exact_node_count, gauss_rule, node_counts
from ._scheduling import TASK_BYTES, row_slices, run_tasks

__all__ = [
    "assemble",
    "check_index",
    "chunk_interactions",
    "INDICES",
    "interaction_values",
    "order_two_interactions",
]

# Index name (shapiq's) -> the order it is defined for here.
INDICES = {"SV": 1, "BV": 1, "SII": 2, "BII": 2, "STII": 2, "k-SII": 2, "Moebius": 2}
# Below this |f| a pair's leave-two-out products are not taken as L_i / f_j: 1 / f_j could
# overflow, and L_i could underflow while the product it stands for does not.
_SMALL_FACTOR = 2.0**-64
_POINT_MASS = {"BV": 0.5, "BII": 0.5, "Moebius": 0.0}


def _point_rule(t):
    return np.array([t]), np.array([1.0 - t]), np.array([1.0])


def _leave_one_out(f):
    """prod_{l != i} f_l for each row, from prefix and suffix products (no division)."""
    loo = np.ones_like(f)
    np.cumprod(f[:, :-1], axis=1, out=loo[:, 1:])
    loo[:, :-1] *= np.cumprod(f[:, :0:-1], axis=1)[:, ::-1]
    return loo


def _leave_two_out(f):
    """prod_{l != i, j} f_l of each row as a (rows, d, d) array (off the diagonal)."""
    n_rows, n_features = f.shape
    without_i = np.repeat(f[:, None, :], n_features, axis=1)
    without_i[:, np.arange(n_features), np.arange(n_features)] = 1.0
    return _leave_one_out(without_i.reshape(-1, n_features)).reshape(n_rows, n_features, -1)


def _rule(index, n_features, deviations, tol):
    """(t, 1 - t, weights) of the index's integral, with the nodes its bound needs."""
    if index in _POINT_MASS:
        return _point_rule(_POINT_MASS[index])
    if deviations is None:
        n_nodes = exact_node_count(n_features)
    else:
        weight_degree = 1 if index == "STII" else 0
        n_nodes = node_counts(deviations.max(keepdims=True), n_features, tol, weight_degree)[0]
    nodes, complements, weights = gauss_rule(int(n_nodes))
    if index == "STII":  # the Beta(1, 2) density 2 (1 - t)
        weights = 2.0 * complements * weights
    return nodes, complements, weights


def _chunk_pairwise(Z, removed, weights, index, tol):
    """Pairwise values (d, d, outputs) and order-one values (d, outputs) of a chunk of pairs.

    The order-one values are those the same nodes give (Shapley, Banzhaf or Moebius values);
    the pairwise matrix is not symmetrised and its diagonal is meaningless.
    """
    n_rows, n_features = Z.shape
    n_outputs = weights.shape[1]
    ones = 1.0 if removed is None else removed
    differences = Z - ones
    deviations = adaptive_deviations(Z, removed) if tol > 0 else None
    pairwise = np.zeros((n_features, n_features * n_outputs))
    order_one = np.zeros((n_outputs, n_features))
    for t, one_minus_t, node_weight in zip(*_rule(index, n_features, deviations, tol)):
        f = one_minus_t * ones + t * Z
        scaled = differences * _leave_one_out(f)
        node_weights = node_weight * weights
        order_one += node_weights.T @ scaled
        small = np.abs(f).min(axis=1) < _SMALL_FACTOR
        regular = ~small
        # (rows, d, outputs) flattened so that every output is one matrix product.
        left = (scaled[regular, :, None] * node_weights[regular, None, :]).reshape(
            regular.sum(), n_features * n_outputs
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            right = differences[regular] / f[regular]
        pairwise += right.T @ left
        # The few pairs with a (nearly) zero factor, division-free, in TASK_BYTES pieces.
        small_rows = np.flatnonzero(small)
        step = max(1, TASK_BYTES // (8 * n_features**2))
        for start in range(0, small_rows.size, step):
            rows = small_rows[start : start + step]
            lto = _leave_two_out(f[rows]) * differences[rows, :, None] * differences[rows, None]
            pairwise += np.einsum("rij,ro->jio", lto, node_weights[rows]).reshape(n_features, -1)
    # pairwise[j, (i, o)] = sum_p w_po c_pi c_pj prod_{l != i, j} f_pl.
    return pairwise.reshape(n_features, n_features, n_outputs), order_one.T


def _moebius_singletons(Z, removed, weights):
    """m({i}) = v({i}) - v(empty) = sum_p w_p c_pi prod_{l != i} b_pl, as (d, outputs)."""
    if removed is None:
        return (Z - 1.0).T @ weights
    return ((Z - removed) * _leave_one_out(removed)).T @ weights


def chunk_interactions(Z, removed, weights, index, tol):
    """Pairwise sums (d, d, outputs) and order-one values (d, outputs) of a chunk of pairs."""
    pairwise, order_one = _chunk_pairwise(Z, removed, weights, index, tol)
    if index == "STII":
        order_one = _moebius_singletons(Z, removed, weights)
    return pairwise, order_one


def order_two_interactions(Z, weights, index):
    """:func:`chunk_interactions` of the game truncated at pairwise interactions
    (:func:`~pkex_select._engine.order_two_contributions`).

    Every index of a pair in a game without terms above order two is the pair's Moebius
    coefficient ``sum_p w_p u_pi u_pj`` (``u = z - 1``); the order-one values are the Shapley
    values (equal to the Banzhaf values in such a game) for SII, BII and k-SII, and the
    Moebius coefficients ``sum_p w_p u_pi`` for STII and Moebius, as the nodes of the full
    game give them.
    """
    n_rows, n_features = Z.shape
    n_outputs = weights.shape[1]
    deviations = Z - 1.0
    weighted = (deviations[:, :, None] * weights[:, None, :]).reshape(n_rows, -1)
    pairwise = (deviations.T @ weighted).reshape(n_features, n_features, n_outputs)
    if index in ("STII", "Moebius"):
        return pairwise, deviations.T @ weights
    return pairwise, order_two_contributions(Z).T @ weights


def check_index(index, max_order):
    """Raise a ValueError unless ``index`` is known and defined for ``max_order``."""
    if index not in INDICES:
        raise ValueError(f"index must be one of {list(INDICES)}, got {index!r}.")
    if max_order != INDICES[index]:
        raise ValueError(
            f"index={index!r} is computed with max_order={INDICES[index]}, got "
            f"max_order={max_order!r}. Order-one values: 'SV' or 'BV'; pairwise: 'SII', "
            "'BII', 'STII', 'k-SII' or 'Moebius'."
        )


def interaction_values(
    Z: ArrayLike,
    weights: ArrayLike,
    *,
    index: str = "SII",
    max_order: int = 2,
    removed_factors: ArrayLike | None = None,
    chunk_size: int | None = None,
    n_jobs: int | None = None,
    tol: float = DEFAULT_TOL,
    baseline=UNSET,
) -> np.ndarray:
    """Exact interaction indices of the product-kernel pair game.

    The game is ``v(S) = sum_p w_p prod_{j in S} Z[p, j] prod_{j not in S} B[p, j]`` as in
    :func:`shapley_values` (``B`` is ``removed_factors``, 1 by default). Each index is one integral
    per pair of the leave-two-out products of the factors (see the module notes), computed
    exactly: the values agree with enumeration of all 2^d coalitions to rounding.

    Parameters
    ----------
    Z : array-like of shape (n_pairs, n_features) or (n_points, n_pairs, n_features)
        Kernel factors; any finite real numbers.
    weights : array-like of shape Z.shape[:-1] or Z.shape[:-1] + (n_outputs,)
        Pair weights ``w_p``.
    index : {"SV", "BV", "SII", "BII", "STII", "k-SII", "Moebius"}, default="SII"
        shapiq's names. ``"SV"`` (Shapley) and ``"BV"`` (Banzhaf) values have order 1.
        Of order 2: the Shapley interaction index ``"SII"`` (Grabisch and Roubens, 1999), the
        Banzhaf interaction index ``"BII"``, the Shapley-Taylor index ``"STII"`` (Sundararajan
        et al., 2020), the 2-Shapley values ``"k-SII"`` (Bordt and von Luxburg, 2023), and the
        Moebius coefficients ``"Moebius"``.
    max_order : {1, 2}, default=2
        1 for "SV" and "BV", 2 for the others.
    removed_factors : array-like broadcastable to Z's shape, default=None
        The factor a removed feature takes; 1 when None.
    chunk_size : int, default=None
        Pairs per task; by default one task holds about 1 MiB of temporaries.
    n_jobs : int, default=None
        Parallel tasks on threads, as joblib counts ``n_jobs``.
    tol : float, default=2**-53
        Bound on the quadrature error of each integral, as in :func:`shapley_values`;
        ``tol=0`` uses ceil(d / 2) nodes. The bound for STII counts its weight 2 (1 - t).

    Returns
    -------
    values : ndarray
        For order 1, shape ``Z.shape[:-2] + (n_features,)``. For order 2, a symmetric array
        of shape ``Z.shape[:-2] + (n_features, n_features)``: entry (i, j), i != j, is the
        pair's index, and the diagonal holds the index's own order-one values: Shapley values
        for SII, Banzhaf values for BII, ``v({i}) - v(empty)`` for STII and Moebius, and
        ``SV_i - 1/2 sum_j SII_ij`` for k-SII. For STII and k-SII the diagonal plus the upper
        triangle sum to ``v(all) - v(empty)``. With a trailing axis on ``weights``, the
        values have a trailing (n_outputs,) axis too.

    See Also
    --------
    shapley_values : The order-one Shapley values alone, faster.

    Examples
    --------
    XOR on two features (the product of two signed factors) is pure interaction:

    >>> import numpy as np
    >>> from pkex_select import interaction_values
    >>> Z = np.array([[-1.0, -1.0]])  # v(S) = prod_{j in S} z_j, v(empty) = 1
    >>> interaction_values(Z, np.array([1.0]), index="Moebius")
    array([[-2.,  4.],
           [ 4., -2.]])
    >>> sii = interaction_values(Z, np.array([1.0]), index="k-SII")
    >>> round(float(np.triu(sii).sum()), 12)  # v(all) - v(empty) = 1 - 1
    0.0
    """
    removed_factors = renamed_baseline(removed_factors, baseline, "interaction_values")
    check_index(index, max_order)
    Z = as_factors(Z)
    check_options("auto", tol)
    weight_matrix, single_output = as_weight_matrix(weights, Z)
    removed = as_removed_factors(removed_factors, Z)
    if index == "SV":
        values = solve_values(
            Z, weight_matrix, removed, chunk_size=chunk_size, n_jobs=n_jobs, tol=tol
        )
        return values[..., 0] if single_output else values

    n_features = Z.shape[-1]
    points = Z.reshape(-1, *Z.shape[-2:])
    point_removed = None if removed is None else removed.reshape(points.shape)
    point_weights = weight_matrix.reshape(points.shape[:2] + (-1,))
    n_outputs = point_weights.shape[-1]
    # Per pair: factors, removed factors, differences, node factors, leave-one-out products
    # and the weighted left matrix (one row per output).
    chunks = row_slices(points.shape[1], 8 * n_features * (5 + n_outputs), chunk_size, n_jobs)

    def task(point_and_rows):
        k, rows = point_and_rows
        Z_chunk = points[k, rows]
        removed_chunk = (
            None if point_removed is None else np.ascontiguousarray(point_removed[k, rows])
        )
        if index == "BV":  # order one: the integrand at t = 1/2
            differences = Z_chunk - (1.0 if removed_chunk is None else removed_chunk)
            integrals = integrals_with_rule(Z_chunk, removed_chunk, _point_rule(0.5))
            return k, None, (differences * integrals).T @ point_weights[k, rows]
        return k, *chunk_interactions(Z_chunk, removed_chunk, point_weights[k, rows], index, tol)

    tasks = [(k, rows) for k in range(len(points)) for rows in chunks]
    pairwise = None if index == "BV" else np.zeros((len(points), n_features, n_features, n_outputs))
    order_one = np.zeros((len(points), n_features, n_outputs))
    for k, part_pairwise, part_order_one in run_tasks(
        task, tasks, n_jobs, work=points.shape[0] * points.shape[1] * n_features**2 / 2
    ):
        if pairwise is not None:
            pairwise[k] += part_pairwise
        order_one[k] += part_order_one
    values = order_one if index == "BV" else assemble(pairwise, order_one, index)
    values = values.reshape(Z.shape[:-2] + values.shape[1:])
    return values[..., 0] if single_output else values


def assemble(pairwise, order_one, index):
    """Symmetrise the pairwise sums and put the index's order-one values on the diagonal."""
    values = (pairwise + np.swapaxes(pairwise, 1, 2)) / 2
    diagonal = np.arange(values.shape[1])
    values[:, diagonal, diagonal] = 0.0
    if index == "k-SII":  # Bernoulli correction of order one: B_1 = -1/2
        order_one = order_one - values.sum(axis=2) / 2
    values[:, diagonal, diagonal] = order_one
    return values
