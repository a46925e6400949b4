"""The proven mathematics of the engine: Gauss-Legendre rules and the error bounds that size them.

Every value of the pair game is a sum of integrals ``I_pj = integral_0^1 prod_{i != j} f_pi(t)
dt`` with ``f_pi(t) = (1 - t) r_pi + t z_pi`` (``z`` the kernel factors, ``r`` the factors a
removed feature takes). This module says how many nodes an integral needs, by a bound that is
proven here, and how many terms the series form needs; it computes no integral itself
(:mod:`._integrals` does, by the rule chosen in :mod:`._engine`).

With ``u_i = r_i - z_i`` and the *deviation* ``S = sum_i |u_i|`` of a pair, the integrand is
``prod_i (r_i - t u_i)``, a polynomial whose coefficient of ``t^q`` is at most ``S^q / q!``
in magnitude when every ``|r_i| <= 1``.
"""

import math
from functools import lru_cache

import numpy as np
from scipy.special import gammaln, roots_legendre

__all__ = [
    "DEFAULT_TOL",
    "SERIES_MAX_DEVIATION",
    "exact_node_count",
    "gauss_rule",
    "log_error_bound",
    "node_counts",
    "series_rule",
]

# Default bound on the quadrature error of each integral: the unit roundoff, so that the
# adaptive rule agrees with the exact one to rounding.
DEFAULT_TOL = 2.0**-53
# The series form converges while every |1 - z_i| is below 1; its truncation bound is kept
# cheap by asking for at most 1/2.
SERIES_MAX_DEVIATION = 0.5


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


def log_error_bound(deviation, first_missed):
    """log of sum_{q >= r} S^q / q! <= S^r / r! / (1 - S / (r + 1)), or inf; r = first_missed."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = deviation / (first_missed + 1)
        bound = first_missed * np.log(deviation) - gammaln(first_missed + 1.0) - np.log1p(-ratio)
    return np.where(ratio < 1, bound, np.inf)


@lru_cache(maxsize=32)
def _largest_deviations(max_nodes, tol, weight_degree=0):
    """For m = 1, ..., max_nodes: the largest S for which m nodes are proven within tol.

    The bound increases with S, so bisection on log S finds it; the values increase with m.
    """
    n_nodes = np.arange(1, max_nodes + 1, dtype=np.float64)
    first_missed = np.maximum(2 * n_nodes - weight_degree, 1)
    low, high = np.full(max_nodes, -745.0), np.log(first_missed + 1)
    for _ in range(80):
        middle = (low + high) / 2
        within = log_error_bound(np.exp(middle), first_missed) <= np.log(tol)
        low, high = np.where(within, middle, low), np.where(within, high, middle)
    return np.exp(low)


def node_counts(deviations, n_features, tol=DEFAULT_TOL, weight_degree=0):
    """Quadrature nodes each pair needs: the fewest whose error bound is at most ``tol``.

    With ``u_i = 1 - z_i`` the integrand is ``prod_i (1 - t u_i) = sum_q (-1)^q e_q(u) t^q``.
    An m-node Gauss rule integrates every power below 2m exactly and misses each higher
    power by at most 1 (the integral and the rule of t^q both lie in [0, 1]), and
    ``|e_q(u)| <= S^q / q!`` with ``S = sum_i |u_i|``, so the error of each integral is at
    most ``sum_{q >= 2m} S^q / q! <= S^{2m} / (2m)! / (1 - S / (2m + 1))``. This holds for
    any real factors, and with factors ``(1 - t) r_i + t z_i`` and ``S = sum_i |z_i - r_i|``
    for removed factors |r_i| <= 1. The count is capped at ceil(d / 2), where the rule is
    exact; ``tol=0`` asks for that everywhere. A polynomial weight of degree g on [0, 1] (the
    Shapley-Taylor index's 2 (1 - t)) whose rule of every t^q also lies in [0, 1] leaves 2m - g
    as the first power missed.

    Parameters
    ----------
    deviations : ndarray
        ``S = sum_i |r_i - z_i|`` of each pair.
    n_features : int
    tol : float, default=2**-53
        Bound on the absolute error of each integral (the unit roundoff by default, so the
        values agree with the exact rule to rounding).
    weight_degree : int, default=0
        Degree of the polynomial weight of the integral.

    Returns
    -------
    ndarray of int, the shape of ``deviations``
    """
    cap = exact_node_count(n_features)
    if tol <= 0:
        return np.full(np.shape(deviations), cap)
    largest = _largest_deviations(cap, float(tol), weight_degree)
    counts = np.searchsorted(largest, deviations, side="left") + 1
    return np.minimum(counts, cap)


def series_rule(deviation, largest, above, n_features, tol=DEFAULT_TOL):
    """Quadrature rule and number of terms of the series form, or None where it diverges.

    With u = 1 - z and ``P(t) = prod_i (1 - t u_i)``, the leave-one-out product is
    ``P(t) / (1 - t u_j)``, so for |u_j| < 1

        I_j = sum_{r >= 0} u_j^r M_r,   M_r = integral_0^1 t^r P(t) dt.

    Truncating after R terms misses at most ``C u^R / ((R + 1) (1 - u))`` with u the largest
    |u_j| and C a bound of |P|: 1 when no factor exceeds 1 (then 0 <= P <= 1), else e^S.
    Each M_r is integrated by an m-node Gauss rule; t^r P(t) is a polynomial whose
    coefficients are at most S^q / q!, so the rule misses at most
    ``sum_{q >= 2m - r} S^q / q!``, the bound of :func:`node_counts` with weight degree
    R - 1. Both parts are kept below tol / 2 (the moments' error is multiplied by at most
    ``sum_r u^r <= 2``), so the result is within ``tol`` like the quadrature rule.

    Parameters
    ----------
    deviation : float
        The largest ``S = sum_i |u_i|`` over the pairs.
    largest : float
        The largest ``|u_i|`` over the pairs and features.
    above : bool
        Whether some factor exceeds 1 (some u_i < 0).
    n_features : int
    tol : float, default=2**-53

    Returns
    -------
    (rule, n_terms) or None
        ``rule`` as :func:`gauss_rule` returns it; None when ``largest`` exceeds
        ``SERIES_MAX_DEVIATION``.
    """
    if largest > SERIES_MAX_DEVIATION:
        return None
    if largest == 0.0:
        n_terms = 1
    else:
        log_bound = deviation if above else 0.0
        n_terms = max(
            1, math.ceil((math.log(tol / 2) - log_bound + math.log1p(-largest)) / math.log(largest))
        )
    n_nodes = int(node_counts(np.array([deviation]), n_features + n_terms, tol / 4, n_terms - 1)[0])
    return gauss_rule(n_nodes), n_terms
