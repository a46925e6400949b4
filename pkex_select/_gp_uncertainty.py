"""The exact posterior covariance of a Gaussian process's observational Shapley values.

Under the observational game a removed feature takes the background's values, feature by
feature, so the value of a coalition S at x, v_x(S) = E_b f(x_S, b_-S), is linear in f and
the Shapley vector phi(x) of a GP posterior f is Gaussian. Its mean is the explanation of the
posterior mean; its covariance follows from the posterior covariance
c(z, z') = k(z, z') - k(z, X) A k(X, z') in two parts (design notes, section 2e):

- the data part -G(x)^T A G(x), where row i of G(x) is the Shapley vector of training point
  i's own game, S -> prod_{j in S} k_j(x_j, X_ij) prod_{j not in S} nu_ij (the engine's
  per-pair contributions);
- the prior part, a game of two coalitions S and T: feature j contributes k_j(x_j, x'_j) in
  both, its background mean mu_j at x_j or x'_j in one, nu_j (the mean over background
  pairs) in neither. With the Shapley weights written as Beta integrals,
  mu(s) = int_0^1 t^s (1 - t)^(d-1-s) dt, the double sum over S and T becomes a double
  integral over (t, u) of a product of bilinear factors, a polynomial of degree d - 1 in
  each variable: Gauss-Legendre with ceil(d / 2) nodes per axis is exact.

For a kernel that is a sum of product terms, each term adds its own prior part; a constant
term moves every coalition alike and adds nothing to the Shapley values.
"""

import numpy as np
from scipy.linalg import solve_triangular

from ._quadrature import exact_node_count, gauss_rule

__all__ = ["data_covariance", "prior_covariance"]


def prior_covariance(own_means, pair_means):
    """The prior part of Cov(phi(x)) for one product term of unit amplitude, at x' = x.

    Parameters
    ----------
    own_means : ndarray of shape (n_points, n_features)
        mu_j(x_j) = mean_b k_j(b_j, x_j) over the background rows b.
    pair_means : ndarray of shape (n_features,)
        nu_j = mean_{b, b'} k_j(b_j, b'_j) over every pair of background rows.

    Returns
    -------
    ndarray of shape (n_points, n_features, n_features)
        Entry (j, k): the sum over coalitions S not holding j and T not holding k of
        mu(|S|) mu(|T|) times the double difference, in j's membership of S and k's of T,
        of prod_i of feature i's factor: k_i(x_i, x_i) = 1 in both coalitions, mu_i in one,
        nu_i in neither.
    """
    mu = np.asarray(own_means, dtype=np.float64)
    n_points, d = mu.shape
    nu = np.broadcast_to(np.asarray(pair_means, dtype=np.float64), (d,))
    nodes, complements, weights = gauss_rule(exact_node_count(d))
    # The tensor grid of (t, u), flattened: (n_nodes, 1) against the features.
    t, u = (a.ravel()[:, None] for a in np.meshgrid(nodes, nodes, indexing="ij"))
    t_, u_ = (a.ravel()[:, None] for a in np.meshgrid(complements, complements, indexing="ij"))
    w = np.outer(weights, weights).ravel()
    covariance = np.empty((n_points, d, d))
    # Points per chunk: the temporaries (points, nodes, features) near 16 MB.
    chunk = max(1, 2_000_000 // (t.size * d))
    for start in range(0, n_points, chunk):
        m = mu[start : start + chunk, None, :]  # (points, 1, features)
        # Each feature's factor summed over its memberships: t for S, u for T. It is at
        # least t u > 0 (k(x_i, x_i) = 1 in both), so the product of the others is the
        # product of all divided by one or two factors.
        factors = t * u + (t * u_ + t_ * u) * m + t_ * u_ * nu
        product = w * np.prod(factors, axis=-1)  # (points, nodes), weighted
        # Feature j's difference in S with T free (u); feature k's in T with S free (t).
        in_s = (u * (1 - m) + u_ * (m - nu)) / factors
        in_t = (t * (1 - m) + t_ * (m - nu)) / factors
        # sum_n product_n in_s[n, j] in_t[n, k]: one matrix product per point (BLAS).
        block = np.matmul((product[..., None] * in_s).transpose(0, 2, 1), in_t)
        diagonal = np.einsum("pn,pnj->pj", product, 1.0 / factors) * (1 - 2 * m[:, 0] + nu)
        block[:, np.arange(d), np.arange(d)] = diagonal
        covariance[start : start + chunk] = block
    return covariance


def data_covariance(contributions, cholesky, left=None):
    """The data part -G^T A G of Cov(phi(x)) for a batch of points.

    Parameters
    ----------
    contributions : ndarray of shape (n_points, n_train, n_features)
        G(x) for each point: row i is the Shapley vector of training point i's game.
    cholesky : ndarray of shape (n_train, n_train)
        Lower Cholesky factor L with A = D L^-T L^-1 D.
    left : ndarray of shape (n_train,), default=None
        The diagonal of D (None: the identity).

    Returns
    -------
    ndarray of shape (n_points, n_features, n_features)
    """
    G = np.asarray(contributions, dtype=np.float64)
    n_points, n_train, d = G.shape
    stacked = G.transpose(1, 0, 2).reshape(n_train, n_points * d)
    if left is not None:
        stacked = left[:, None] * stacked
    V = solve_triangular(cholesky, stacked, lower=True, check_finite=False)
    V = V.reshape(n_train, n_points, d)
    return -np.einsum("ipj,ipk->pjk", V, V)
