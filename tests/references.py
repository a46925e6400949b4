"""Independent references for the pair-game Shapley values: the tests' oracles.

The benchmarks time the same functions as baselines.

- :func:`enumeration_shapley` evaluates all 2^d coalitions (the definition itself).
- :func:`recursion_shapley` is the published PKeX-Shapley algorithm: prefix tables of
  elementary symmetric polynomials (ESPs) and mu-weighted suffix tables, O(d^2) time and
  memory per pair, vectorised over pairs. Its ESPs grow like binomial(d, q), so with factors
  near 1 it overflows from d of about 1030.

Neither is imported by the package.
"""

import numpy as np
import sklearn
from scipy.special import gammaln
from sklearn.utils.fixes import parse_version


def shapley_weights(n_features):
    """mu(q) = q! (d-1-q)! / d! for q = 0, ..., d-1."""
    q = np.arange(n_features)
    return np.exp(gammaln(q + 1) + gammaln(n_features - q) - gammaln(n_features + 1))


def coalition_values(Z, weights, max_bytes=256 * 2**20):
    """v(S) = sum_p w_p prod_{j in S} z_pj for every mask S (bit j = feature j).

    Pairs are taken in chunks so that the (2^d, chunk) table of products stays within
    ``max_bytes``.
    """
    Z = np.asarray(Z, dtype=np.float64)
    weights = np.asarray(weights, dtype=np.float64)
    n_pairs, n_features = Z.shape
    chunk = max(1, max_bytes // (16 * 2**n_features))
    values = np.zeros(2**n_features)
    for start in range(0, n_pairs, chunk):
        block = Z[start : start + chunk]
        products = np.ones((1, block.shape[0]))
        for j in range(n_features):
            # Masks with bit j set follow those without it: products[mask | 1 << j] = ... * z_j.
            products = np.concatenate([products, products * block[:, j]])
        values += products @ weights[start : start + chunk]
    return values


def shapley_from_coalition_values(values, n_features):
    """Shapley values of a game given as v over all 2^d masks."""
    masks = np.arange(values.size)
    sizes = np.array([bin(m).count("1") for m in masks])
    mu = shapley_weights(n_features)
    phi = np.empty(n_features)
    for j in range(n_features):
        without = masks[(masks >> j) & 1 == 0]
        phi[j] = np.sum(mu[sizes[without]] * (values[without | (1 << j)] - values[without]))
    return phi


def enumeration_shapley(Z, weights):
    """Shapley values of the pair game by enumerating all 2^d coalitions (d <= 20)."""
    Z = np.asarray(Z, dtype=np.float64)
    return shapley_from_coalition_values(coalition_values(Z, weights), Z.shape[1])


def recursion_shapley(Z, weights):
    """Shapley values by the published prefix/suffix ESP recursion.

    For feature j the inner sum ``sum_q mu(q) e_q(z_-j)`` is assembled as
    ``sum_t L[j][t] G[j + 1][t]`` where ``L[j][t] = e_t(z_0, ..., z_{j-1})`` and
    ``G[j][t] = sum_u mu(t + u) e_u(z_j, ..., z_{d-1})``, filled by
    ``L[j + 1][t] = L[j][t] + z_j L[j][t - 1]`` and ``G[j][t] = G[j + 1][t] + z_j G[j + 1][t + 1]``.
    All tables are kept, as in the published code: O(d^2) memory per pair.
    """
    Z = np.asarray(Z, dtype=np.float64)
    n_pairs, d = Z.shape
    mu = np.append(shapley_weights(d), 0.0)  # mu(d) = 0 is the sentinel of the suffix table

    with np.errstate(over="ignore", invalid="ignore"):
        omega = _recursion_omega(Z, mu)
    return np.asarray(weights, dtype=np.float64) @ ((Z - 1.0) * omega)


def _recursion_omega(Z, mu):
    n_pairs, d = Z.shape
    prefix = [np.ones((1, n_pairs))]
    for j in range(d):
        prev = prefix[-1]
        cur = np.empty((j + 2, n_pairs))
        cur[0] = 1.0
        cur[1 : j + 1] = prev[1:] + Z[:, j] * prev[:-1]
        cur[j + 1] = Z[:, j] * prev[j]
        prefix.append(cur)

    suffix = [None] * (d + 1)
    suffix[d] = np.repeat(mu[:, None], n_pairs, axis=1)
    for j in range(d - 1, -1, -1):
        nxt = suffix[j + 1]
        cur = np.zeros((d + 1, n_pairs))
        cur[:d] = nxt[:d] + Z[:, j] * nxt[1:]
        suffix[j] = cur

    omega = np.empty((n_pairs, d))
    for j in range(d):
        omega[:, j] = np.sum(prefix[j] * suffix[j + 1][: j + 1], axis=0)
    return omega


def interpolation_shapley(Z, weights, nodes="fft", max_bytes=64 * 2**20):
    """Shapley values by interpolating the generating polynomial, as published.

    ``P_j(y) = prod_{i != j} (1 + z_i y) = sum_q e_q(z_-j) y^q`` is evaluated at d nodes and
    ``sum_q mu(q) e_q`` is read off as a fixed linear combination of those values: at the
    d-th roots of unity (``"fft"``; the combination is the FFT of mu) or at Chebyshev points
    of the second kind (``"chebyshev"``; the combination solves a Vandermonde system). Both
    are exact in exact arithmetic and lose digits fast in floating point: the polynomial's
    values span many orders of magnitude and the Vandermonde system is ill-conditioned.
    """
    Z = np.asarray(Z, dtype=np.float64)
    n_pairs, d = Z.shape
    mu = shapley_weights(d)
    if nodes == "fft":
        points = np.exp(2j * np.pi * np.arange(d) / d)
        combination = np.fft.fft(mu) / d
    elif nodes == "chebyshev":
        points = np.cos(np.pi * np.arange(d) / max(d - 1, 1)) if d > 1 else np.zeros(1)
        vandermonde = points[:, None] ** np.arange(d)[None, :]
        combination = np.linalg.solve(vandermonde.T, mu)
    else:
        raise ValueError(f"nodes must be 'fft' or 'chebyshev', got {nodes!r}")
    omega = np.empty((n_pairs, d))
    rows = max(1, max_bytes // (16 * d * d * 3))
    with np.errstate(all="ignore"):
        for start in range(0, n_pairs, rows):
            block = Z[start : start + rows]
            factors = 1.0 + block[:, None, :] * points[None, :, None]  # (pairs, nodes, d)
            loo = np.ones_like(factors)
            np.cumprod(factors[:, :, :-1], axis=2, out=loo[:, :, 1:])
            loo[:, :, :-1] *= np.cumprod(factors[:, :, :0:-1], axis=2)[:, :, ::-1]
            omega[start : start + rows] = np.real(np.einsum("l,pld->pd", combination, loo))
    return np.asarray(weights, dtype=np.float64) @ ((Z - 1.0) * omega)


def general_coalition_values(Z, baseline, weights):
    """v(S) = sum_p w_p prod_{j in S} z_pj prod_{j not in S} b_pj for every mask S."""
    Z = np.asarray(Z, dtype=np.float64)
    baseline = np.broadcast_to(np.asarray(baseline, dtype=np.float64), Z.shape)
    n_features = Z.shape[1]
    products = np.ones((1, Z.shape[0]))
    for j in range(n_features):
        # Masks without bit j come first, with b_j; those with it follow, with z_j.
        products = np.concatenate([products * baseline[:, j], products * Z[:, j]])
    return products @ np.asarray(weights, dtype=np.float64)


def moebius_transform(values, n_features):
    """m(T) = sum_{L subset of T} (-1)^{|T| - |L|} v(L), over masks (the fast zeta inverse)."""
    m = np.array(values, dtype=np.float64)
    for j in range(n_features):
        with_j = (np.arange(m.size) >> j) & 1 == 1
        m[with_j] -= m[~with_j]
    return m


def truncated_game(values, n_features, max_order):
    """The game with the Moebius coefficients of ``values`` above ``max_order`` set to 0:
    v'(S) = sum_{T subset of S, |T| <= max_order} m(T), over masks (the fast zeta transform)."""
    m = moebius_transform(values, n_features)
    sizes = np.array([bin(mask).count("1") for mask in range(m.size)])
    m[sizes > max_order] = 0.0
    for j in range(n_features):
        with_j = (np.arange(m.size) >> j) & 1 == 1
        m[with_j] += m[~with_j]
    return m


def interaction_reference(values, n_features, index):
    """Order-two (or order-one) index from its definition as a sum over Moebius coefficients.

    SII(T) = sum_{S > T} m(S) / (|S| - |T| + 1), BII(T) = sum m(S) / 2^{|S| - |T|},
    STII(ij) = sum_{S > ij} m(S) / C(|S|, 2) with STII(i) = m(i), k-SII of order one
    SV_i - 1/2 sum_j SII_ij; the diagonal holds the order-one values as in the package.
    """
    from math import comb

    m = moebius_transform(values, n_features)
    masks = np.arange(m.size)
    sizes = np.array([bin(s).count("1") for s in masks])

    def over_supersets(subset, weight):
        contains = (masks & subset) == subset
        return float(np.sum(m[contains] * weight(sizes[contains])))

    d = n_features
    shapley = np.array([over_supersets(1 << i, lambda s: 1.0 / s) for i in range(d)])
    banzhaf = np.array([over_supersets(1 << i, lambda s: 0.5 ** (s - 1)) for i in range(d)])
    if index == "SV":
        return shapley
    if index == "BV":
        return banzhaf
    pair_weight = {
        "SII": lambda s: 1.0 / (s - 1),
        "k-SII": lambda s: 1.0 / (s - 1),
        "BII": lambda s: 0.5 ** (s - 2),
        "STII": lambda s: 1.0 / np.array([comb(int(k), 2) for k in s]),
        "Moebius": lambda s: (s == 2).astype(float),
    }[index]
    out = np.zeros((d, d))
    for i in range(d):
        for j in range(i + 1, d):
            out[i, j] = out[j, i] = over_supersets((1 << i) | (1 << j), pair_weight)
    diagonal = {
        "SII": shapley,
        "k-SII": shapley - out.sum(axis=1) / 2,
        "BII": banzhaf,
        "STII": np.array([m[1 << i] for i in range(d)]),
        "Moebius": np.array([m[1 << i] for i in range(d)]),
    }[index]
    out[np.arange(d), np.arange(d)] = diagonal
    return out


# scikit-learn 1.6's check_positive_only_tag_during_fit makes integer X for an estimator that
# declares categorical input and then subtracts a float mean in place, which NumPy refuses;
# 1.7 fixed the check.
SKLEARN_CHECK_BUGS = (
    {"check_positive_only_tag_during_fit": "scikit-learn 1.6's check fails on categorical tags"}
    if parse_version(sklearn.__version__) < parse_version("1.7")
    else {}
)
