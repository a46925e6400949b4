"""The proven mathematics of the engine: Gauss-Legendre rules and the error bounds that size them.

Every value of the pair game is a sum of integrals ``I_pj = integral_0^1 prod_{i != j} f_pi(t)
dt`` with ``f_pi(t) = (1 - t) r_pi + t z_pi`` (``z`` the kernel factors, ``r`` the factors a
removed feature takes). This module says how many nodes an integral needs, by a bound that is
proven here, and how many terms the series form needs; it computes no integral itself
(:mod:`._integrals` does, by the rule chosen in :mod:`._engine`).

With ``u_i = r_i - z_i`` and the *deviation* ``S = sum_i |u_i|`` of a pair, the integrand is
``prod_i (r_i - t u_i)``, a polynomial whose coefficient of ``t^q`` is at most
``C(n, q) (S / n)^q <= S^q / q!`` in magnitude (n factors) when every ``|r_i| <= 1``.
"""

import math
from functools import lru_cache

import numpy as np
from scipy.special import gammaln, roots_legendre

__all__ = [
    "DEFAULT_TOL",
    "SERIES_MAX_DEVIATION",
    "deviation_limits",
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


# Powers whose rule error _log_rule_error_bound bounds one by one; beyond them, as a whole.
_EXPLICIT_POWERS = 64


def _log_rule_error_bound(deviation, n_nodes, n_factors):
    """log of a bound on the error of the ``n_nodes``-node Gauss rule on
    ``integral_0^1 prod_{i < n_factors} (r_i - t u_i) dt`` with ``sum_i |u_i| <= S`` and
    every ``|r_i| <= 1`` (broadcast over ``deviation`` = S and ``n_nodes``).

    The coefficient of ``t^q`` is at most ``e_q(|u|) <= C(n, q) (S / n)^q`` (Maclaurin's
    inequality, n = ``n_factors``), which is ``S^q / q!`` times ``prod_{i < q} (1 - i / n)``,
    and 0 beyond q = n. The m-node rule integrates every power below 2m exactly and misses
    ``t^q`` by ``f^(2m)(xi) (m!)^4 / ((2m + 1) ((2m)!)^3)`` with ``f^(2m) <= q! / (q - 2m)!``
    (the Gauss-Legendre remainder on [0, 1]), so by at most ``C(q, 2m) (m!)^4 / ((2m + 1)
    ((2m)!)^2)``, and by at most 1 (the integral and the rule of t^q both lie in [0, 1]).
    Each power up to 2m + ``_EXPLICIT_POWERS`` is bounded so; the rest by
    :func:`log_error_bound`.
    """
    m = np.asarray(n_nodes, dtype=np.float64)[..., None]
    first = 2.0 * m
    powers = first + np.arange(_EXPLICIT_POWERS)
    n = float(max(n_factors, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        log_s = np.log(np.asarray(deviation, dtype=np.float64))[..., None]
        coefficients = (
            gammaln(n + 1)
            - gammaln(powers + 1)
            - gammaln(np.maximum(n - powers, 0) + 1)
            + powers * (log_s - np.log(n))
        )
        misses = np.minimum(
            0.0,
            gammaln(powers + 1)
            - gammaln(first + 1)
            - gammaln(powers - first + 1)
            + 4 * gammaln(m + 1)
            - np.log(first + 1)
            - 2 * gammaln(first + 1),
        )
        terms = np.where(powers <= n_factors, coefficients + misses, -np.inf)
        explicit = np.logaddexp.reduce(terms, axis=-1)
        rest = first[..., 0] + _EXPLICIT_POWERS
        tail = np.where(rest <= n_factors, log_error_bound(np.exp(log_s[..., 0]), rest), -np.inf)
    return np.logaddexp(explicit, tail)


@lru_cache(maxsize=32)
def _largest_deviations(max_nodes, tol, weight_degree=0, n_factors=None):
    """For m = 1, ..., max_nodes: the largest S for which m nodes are proven within tol
    (by :func:`_log_rule_error_bound` for ``n_factors`` factors and no weight, else by
    :func:`log_error_bound`).

    The bound increases with S, so bisection on log S finds it; the values increase with m.
    """
    n_nodes = np.arange(1, max_nodes + 1, dtype=np.float64)
    low = np.full(max_nodes, -745.0)
    if weight_degree == 0 and n_factors is not None:
        high = np.full(max_nodes, 700.0)  # S up to e^700

        def within(log_s):
            return _log_rule_error_bound(np.exp(log_s), n_nodes, n_factors) <= np.log(tol)

    else:
        first_missed = np.maximum(2 * n_nodes - weight_degree, 1)
        high = np.log(first_missed + 1)

        def within(log_s):
            return log_error_bound(np.exp(log_s), first_missed) <= np.log(tol)

    for _ in range(80):
        middle = (low + high) / 2
        inside = within(middle)
        low, high = np.where(inside, middle, low), np.where(inside, high, middle)
    return np.exp(low)


def node_counts(deviations, n_features, tol=DEFAULT_TOL, weight_degree=0):
    """Quadrature nodes each pair needs: the fewest whose error bound is at most ``tol``.

    With ``u_i = 1 - z_i`` the integrand is ``prod_i (1 - t u_i) = sum_q (-1)^q e_q(u) t^q``,
    a polynomial of degree d - 1 (the product leaves one feature out). An m-node Gauss rule
    integrates every power below 2m exactly and misses each higher one by little, and
    ``|e_q(u)| <= C(d - 1, q) (S / (d - 1))^q <= S^q / q!`` with ``S = sum_i |u_i|``; the
    error of each integral is at most the sum of these products over q >= 2m
    (:func:`_log_rule_error_bound`). This holds for any real factors, and with factors
    ``(1 - t) r_i + t z_i`` and ``S = sum_i |z_i - r_i|`` for removed factors |r_i| <= 1
    (and for products that leave two features out). The count is capped at ceil(d / 2), where
    the rule is exact; ``tol=0`` asks for that everywhere. With a polynomial weight of degree
    g on [0, 1] (the Shapley-Taylor index's 2 (1 - t)) whose rule of every t^q also lies in
    [0, 1], the cruder bound ``sum_{q >= 2m - g} S^q / q!`` (each power missed by at most 1,
    :func:`log_error_bound`) is used.

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
    limits = deviation_limits(n_features, tol, weight_degree)
    return np.minimum(np.searchsorted(limits, deviations, side="left") + 1, cap)


def deviation_limits(n_features, tol=DEFAULT_TOL, weight_degree=0):
    """For m = 1, ..., ceil(d / 2): the largest deviation S for which m nodes are within
    ``tol`` (:func:`node_counts`: a pair takes the fewest m with ``S <= limits[m - 1]``,
    and at most ceil(d / 2)); -1 everywhere for ``tol=0``, so that no pair takes fewer."""
    cap = exact_node_count(n_features)
    if tol <= 0:
        return np.full(cap, -1.0)
    n_factors = n_features - 1 if weight_degree == 0 else None
    return _largest_deviations(cap, float(tol), weight_degree, n_factors)


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
