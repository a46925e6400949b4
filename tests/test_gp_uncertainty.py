"""The posterior covariance of a GP's observational Shapley values, against enumeration.

The oracle knows nothing of the engine: it enumerates every coalition S and every point
(x_S, b_-S) of the background grid (each removed feature takes any background row's value,
feature by feature), asks scikit-learn for the posterior covariance C of f at all of them,
averages per coalition (M) and applies the Shapley weights (W): Cov(phi(x)) = W M C M^T W^T.
"""

import itertools
import math

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessClassifier, GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

from pkex_select import ProductKernelExplainer
from pkex_select._gp_uncertainty import prior_covariance


def _grid(x, background):
    """Every coalition's grid points and the averaging matrix M (coalitions x points)."""
    d = x.size
    points, owners = [], []
    for mask in range(2**d):
        kept = [(mask >> j) & 1 for j in range(d)]
        removed = [j for j in range(d) if not kept[j]]
        for rows in itertools.product(range(len(background)), repeat=len(removed)):
            z = x.copy()
            z[removed] = background[list(rows), removed]
            points.append(z)
            owners.append(mask)
    owners = np.array(owners)
    M = np.zeros((2**d, len(points)))
    for mask in range(2**d):
        M[mask, owners == mask] = 1.0 / np.sum(owners == mask)
    return np.array(points), M


def _shapley_weights(d):
    """W (d x 2^d): phi_j = sum_S mu(|S|) (v(S + j) - v(S)) over S without j."""
    W = np.zeros((d, 2**d))
    for j in range(d):
        for mask in range(2**d):
            if (mask >> j) & 1:
                continue
            size = bin(mask).count("1")
            weight = math.factorial(size) * math.factorial(d - 1 - size) / math.factorial(d)
            W[j, mask | (1 << j)] += weight
            W[j, mask] -= weight
    return W


def _oracle(points_cov, x, background):
    points, M = _grid(x, background)
    mean, C = points_cov(points)
    W = _shapley_weights(x.size)
    return W @ M @ mean, W @ M @ C @ M.T @ W.T


def _data(d, n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(X[:, 0]) + X[:, -1] ** 2 + 0.1 * rng.normal(size=n)
    return X, y, rng


def _assert_close(actual, expected, rtol):
    scale = np.abs(expected).max()
    np.testing.assert_allclose(actual, expected, rtol=0, atol=rtol * scale)


KERNELS = {
    "isotropic": lambda d: ConstantKernel(1.5) * RBF(1.2),
    "per feature, noise": lambda d: (
        ConstantKernel(0.8) * RBF(np.linspace(0.7, 2.0, d)) + WhiteKernel(0.05)
    ),
}


@pytest.mark.parametrize("d", [2, 3, 4, 5, 6])
@pytest.mark.parametrize("kernel", list(KERNELS))
@pytest.mark.parametrize("normalize_y", [False, True])
def test_regression_covariance_matches_the_enumerated_posterior(d, kernel, normalize_y):
    X, y, rng = _data(d)
    # alpha: the noise that keeps K + alpha I well conditioned, as on real data.
    gp = GaussianProcessRegressor(
        KERNELS[kernel](d), alpha=1e-2, optimizer=None, normalize_y=normalize_y
    )
    gp.fit(X, 3.0 * y + 1.0)
    background = rng.normal(size=(3 if d < 6 else 2, d))
    explainer = ProductKernelExplainer(gp, value_function="observational", background=background)
    x = rng.normal(size=d)
    explanation = explainer.explain(x[None], return_covariance=True)
    noise = gp.kernel_.k2.noise_level if kernel == "per feature, noise" else 0.0
    noise *= gp._y_train_std**2  # normalize_y scales the whole predictive covariance

    def latent(points):
        mean, cov = gp.predict(points, return_cov=True)
        return mean, cov - noise * np.eye(len(points))  # WhiteKernel: noise, not f

    mean, covariance = _oracle(latent, x, background)
    _assert_close(explanation.values[0], mean, 1e-10)
    _assert_close(explanation.covariance[0], covariance, 1e-8)
    np.testing.assert_allclose(explanation.std[0], np.sqrt(np.diag(covariance)), rtol=1e-6)


@pytest.mark.parametrize("d", [2, 4])
def test_classifier_latent_covariance_matches_the_laplace_posterior(d):
    X, y, rng = _data(d, n=50)
    labels = (y > np.median(y)).astype(int)
    gp = GaussianProcessClassifier(ConstantKernel(2.0) * RBF(1.0), optimizer=None).fit(X, labels)
    background = rng.normal(size=(3, d))
    explainer = ProductKernelExplainer(gp, value_function="observational", background=background)
    x = rng.normal(size=d)
    explanation = explainer.explain(x[None], return_covariance=True)
    binary = gp.base_estimator_
    # The Laplace posterior of the latent f: mean k(z, X)(y - pi), covariance
    # k(z, z') - k(z, X) (K + W^-1)^-1 k(X, z') (Rasmussen and Williams, section 3.4.2).
    K = binary.kernel_(binary.X_train_)
    precision = np.linalg.inv(K + np.diag(1.0 / binary.W_sr_**2))

    def latent(points):
        cross = binary.kernel_(points, binary.X_train_)
        return cross @ (binary.y_train_ - binary.pi_), binary.kernel_(points) - (
            cross @ precision @ cross.T
        )

    mean, covariance = _oracle(latent, x, background)
    _assert_close(explanation.values[0], mean, 1e-10)
    _assert_close(explanation.covariance[0], covariance, 1e-8)


def test_covariance_is_within_monte_carlo_error_of_posterior_draws():
    d, draws = 3, 20_000
    X, y, rng = _data(d)
    gp = GaussianProcessRegressor(ConstantKernel(1.0) * RBF(1.0), alpha=1e-2, optimizer=None)
    gp.fit(X, y)
    background = rng.normal(size=(3, d))
    explainer = ProductKernelExplainer(gp, value_function="observational", background=background)
    x = rng.normal(size=d)
    exact = explainer.explain(x[None], return_covariance=True).covariance[0]
    points, M = _grid(x, background)
    samples = gp.sample_y(points, draws, random_state=0)  # (points, draws)
    phi = _shapley_weights(d) @ M @ samples  # (d, draws)
    sampled = np.cov(phi)
    # The standard error of a sample covariance is about sqrt((s_jj s_kk + s_jk^2) / draws).
    error = np.sqrt((np.outer(np.diag(exact), np.diag(exact)) + exact**2) / draws)
    assert np.all(np.abs(sampled - exact) <= 5 * error)


def test_a_batch_and_several_rows_agree_with_one_row_at_a_time():
    X, y, rng = _data(4)
    gp = GaussianProcessRegressor(ConstantKernel(1.0) * RBF([1.0, 2.0, 0.5, 1.5])).fit(X, y)
    explainer = ProductKernelExplainer(gp, value_function="observational", background=X[:20])
    rows = rng.normal(size=(5, 4))
    batch = explainer.explain(rows, return_covariance=True)
    assert batch.covariance.shape == (5, 4, 4) and batch.std.shape == (5, 4)
    for i in range(5):
        one = explainer.explain(rows[i : i + 1], return_covariance=True)
        np.testing.assert_allclose(one.covariance[0], batch.covariance[i], rtol=1e-12)
    np.testing.assert_allclose(batch.covariance, batch.covariance.transpose(0, 2, 1), atol=1e-15)
    assert np.all(np.linalg.eigvalsh(batch.covariance) > -1e-10)
    # Indexing keeps the covariance of the rows and features kept.
    part = batch[1:3, [0, 2]]
    np.testing.assert_array_equal(part.covariance, batch.covariance[1:3][:, [0, 2]][:, :, [0, 2]])
    # Without the covariance the values are the same, to rounding.
    np.testing.assert_allclose(explainer.explain(rows).values, batch.values, rtol=1e-12, atol=1e-15)
    assert explainer.explain(rows).covariance is None and explainer.explain(rows).std is None


def test_the_prior_part_matches_the_two_coalition_game():
    rng = np.random.default_rng(3)
    for d in (1, 2, 4, 5):
        own, pair = rng.uniform(0.1, 0.9, size=(2, d)), rng.uniform(0.05, 0.5, size=d)
        expected = np.zeros((2, d, d))
        W = _shapley_weights(d)
        for p in range(2):
            C = np.empty((2**d, 2**d))
            for S, T in itertools.product(range(2**d), repeat=2):
                C[S, T] = math.prod(
                    1.0 if (S >> i) & (T >> i) & 1 else own[p, i] if ((S | T) >> i) & 1 else pair[i]
                    for i in range(d)
                )
            expected[p] = W @ C @ W.T
        _assert_close(prior_covariance(own, pair), expected, 1e-13)


def test_covariance_is_refused_where_it_has_no_meaning():
    from sklearn.svm import SVR

    X, y, _ = _data(3)
    gp = GaussianProcessRegressor(ConstantKernel(1.0) * RBF(1.0)).fit(X, y)
    with pytest.raises(ValueError, match="needs value_function='observational'"):
        ProductKernelExplainer(gp).explain(X[:2], return_covariance=True)
    observational = ProductKernelExplainer(gp, value_function="observational", background=X)
    with pytest.raises(ValueError, match="Shapley values"):
        observational.explain(X[:2], index="SII", max_order=2, return_covariance=True)
    svr = ProductKernelExplainer(SVR().fit(X, y), value_function="observational", background=X)
    with pytest.raises(TypeError, match="not a distribution over functions"):
        svr.explain(X[:2], return_covariance=True)
