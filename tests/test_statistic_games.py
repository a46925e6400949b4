"""Observational value function and interaction indices of the HSIC and MMD games.

The references build every coalition's Gram matrix (removed features replaced by their
mean over each cell) and evaluate the estimator on it: the definitions, with no pair game.
"""

import numpy as np
import pytest

from pkex_select import (
    HSICShapleySelector,
    MMDShapleyAttributor,
    hsic_shapley_values,
    mmd_shapley_values,
)
from pkex_select._features import DataFactors, JointFactors
from pkex_select._plan import AllPairs
from pkex_select.kernels import gram_matrices
from tests.references import interaction_reference, shapley_from_coalition_values

N_FEATURES = 5


def _masks():
    return [
        np.array([(m >> j) & 1 for j in range(N_FEATURES)], dtype=bool)
        for m in range(2**N_FEATURES)
    ]


def _hsic(estimator, L):
    n = L.shape[0]
    H = np.eye(n) - 1.0 / n
    off_L = L - np.diag(np.diag(L))
    one = np.ones(n)

    def biased(K):
        return np.trace(K @ H @ L @ H) / (n - 1) ** 2

    def unbiased(K):
        off_K = K - np.diag(np.diag(K))
        return (
            np.trace(off_K @ off_L)
            + one @ off_K @ one * (one @ off_L @ one) / ((n - 1) * (n - 2))
            - 2 / (n - 2) * one @ off_K @ off_L @ one
        ) / (n * (n - 3))

    return {"biased": biased, "unbiased": unbiased}[estimator]


def _mmd(estimator, labels):
    P, Q = labels == 0, labels == 1

    def within(K, S):
        block = K[np.ix_(S, S)]
        if estimator == "biased":
            return block.mean()
        m = S.sum()
        return (block.sum() - np.trace(block)) / (m * (m - 1))

    return lambda K: within(K, P) + within(K, Q) - 2 * K[np.ix_(P, Q)].mean()


def _cell_means(K, cells):
    """Each feature's Gram matrix replaced by its mean over each cell (lists of index sets)."""
    means = np.empty_like(K)
    for rows, columns in cells:
        block = np.ix_(rows, columns)
        means[:, block[0], block[1]] = K[:, block[0], block[1]].mean(axis=(1, 2))[:, None, None]
    return means


def _game(statistic, K, removed):
    return np.array(
        [statistic(np.prod(np.where(mask[:, None, None], K, removed), axis=0)) for mask in _masks()]
    )


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, N_FEATURES))
    X[15:, 1] += 1.0
    y = X[:, 0] ** 2 + 0.3 * rng.normal(size=30)
    labels = np.repeat([0, 1], 15)
    return gram_matrices(X, "rbf", 0.5), gram_matrices(y[:, None], "rbf", 0.5)[0], labels


@pytest.mark.parametrize("estimator", ["biased", "unbiased"])
def test_observational_hsic_matches_its_definition(data, estimator):
    K, L, _ = data
    everyone = np.arange(K.shape[1])
    game = _game(_hsic(estimator, L), K, _cell_means(K, [(everyone, everyone)]))
    expected = shapley_from_coalition_values(game, N_FEATURES)
    got = hsic_shapley_values(K, L, estimate=estimator, value_function="observational")
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12 * np.abs(expected).max())
    assert game[0] == pytest.approx(0.0, abs=1e-15)  # HSIC of a constant kernel


@pytest.mark.parametrize("estimator", ["biased", "unbiased"])
def test_observational_mmd_matches_its_definition(data, estimator):
    K, _, labels = data
    P, Q = np.flatnonzero(labels == 0), np.flatnonzero(labels == 1)
    removed = _cell_means(K, [(P, P), (Q, Q), (P, Q), (Q, P)])
    game = _game(_mmd(estimator, labels), K, removed)
    expected = shapley_from_coalition_values(game, N_FEATURES)
    got = mmd_shapley_values(K, labels, estimate=estimator, value_function="observational")
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12 * np.abs(expected).max())
    assert got.sum() == pytest.approx(game[-1] - game[0], rel=1e-12)


def test_block_estimators_take_their_means_over_the_drawn_blocks(data):
    K, L, labels = data
    for function, target in [(hsic_shapley_values, L), (mmd_shapley_values, labels)]:
        observational = function(
            K,
            target,
            estimate="block",
            block_size=10,
            value_function="observational",
            random_state=0,
        )
        baseline = function(K, target, estimate="block", block_size=10, random_state=0)
        assert np.all(np.isfinite(observational))
        assert not np.allclose(observational, baseline)


def test_estimator_interactions_match_enumeration():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, N_FEATURES))
    y = X[:, 0] * X[:, 1] + 0.2 * rng.normal(size=40)
    for value_function in ["baseline", "observational"]:
        selector = HSICShapleySelector(
            scales=[1.0], interactions="k-SII", value_function=value_function
        ).fit(X, y)
        Xs = (X - X.mean(axis=0)) / X.std(axis=0)
        K = gram_matrices(Xs, "rbf", selector.gammas_)
        ys = (y - y.mean()) / y.std()
        L = gram_matrices(ys[:, None], "rbf", selector._target(y, y).gamma)[0]
        everyone = np.arange(40)
        removed = (
            _cell_means(K, [(everyone, everyone)])
            if value_function == "observational"
            else np.ones_like(K)
        )
        game = _game(_hsic("biased", L), K, removed)
        expected = interaction_reference(game, N_FEATURES, "k-SII")
        np.testing.assert_allclose(
            selector.interaction_values_, expected, rtol=0, atol=1e-10 * np.abs(expected).max()
        )
        np.testing.assert_allclose(
            np.triu(selector.interaction_values_).sum(), selector.hsic_, rtol=1e-10
        )


@pytest.mark.parametrize("value_function, margin", [("baseline", 5), ("observational", 2)])
def test_an_xor_pair_stands_out_among_the_interactions(value_function, margin):
    # Under the observational game, replacing any K_k by its mean rescales HSIC(K_S, L),
    # so every feature interacts with the pair a little: the margin is smaller.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 12))
    y = np.sign(X[:, 5] * X[:, 9])
    selector = HSICShapleySelector(2, interactions="SII", value_function=value_function)
    pairwise = selector.fit(X, y).interaction_values_.copy()
    np.fill_diagonal(pairwise, 0.0)
    assert set(np.unravel_index(np.argmax(pairwise), pairwise.shape)) == {5, 9}
    others = np.delete(np.delete(pairwise, [5, 9], axis=0), [5, 9], axis=1)
    assert pairwise[5, 9] > margin * np.abs(others).max()


def test_observational_mmd_permutations_are_games_of_their_own():
    from pkex_select._pairgame import draw_permutations

    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 4))
    X[30:, 2] *= 2.0
    labels = np.repeat(["a", "b"], 30)
    attributor = MMDShapleyAttributor(
        1, n_permutations=5, value_function="observational", interactions="STII", random_state=0
    ).fit(X, labels)
    # Each permutation's values are those of the game with the labels in that order: the
    # block means are taken again for every order.
    orders = draw_permutations(60, 5, np.random.RandomState(0))
    for k in range(1, 6):
        again = MMDShapleyAttributor(value_function="observational").fit(X, labels[orders[k]])
        np.testing.assert_allclose(
            attributor.null_distribution_[k - 1], again.shapley_values_, rtol=1e-10, atol=1e-15
        )
    np.testing.assert_allclose(
        np.triu(attributor.interaction_values_).sum(), attributor.mmd_, rtol=1e-10
    )
    with pytest.raises(ValueError, match="value_function"):
        MMDShapleyAttributor(value_function="marginal").fit(X, labels)
    with pytest.raises(ValueError, match="interactions"):
        MMDShapleyAttributor(interactions="SV").fit(X, labels)


def test_observational_mmd_puts_marginal_drift_into_the_empty_coalition():
    """Documented: the block means hold each feature's marginal drift, so v(empty) does."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 4))
    X[150:, 2] *= 2.0
    labels = np.repeat([0, 1], 150)
    K = gram_matrices((X - X.mean(axis=0)) / X.std(axis=0), "rbf", 1.0)
    baseline = mmd_shapley_values(K, labels)
    observational = mmd_shapley_values(K, labels, value_function="observational")
    assert np.argmax(baseline) == 2
    assert observational[2] < 0.1 * baseline[2]


@pytest.mark.parametrize(
    "kernels",
    [("rbf",) * 4, ("laplacian", "rbf", "delta", "cauchy"), ("delta", "delta", "rbf", "cauchy")],
)
def test_the_joint_kernel_in_one_exponential_is_the_product_of_the_factors(kernels):
    rng = np.random.default_rng(9)
    X = rng.normal(size=(30, 4))
    X[:, 2] = rng.integers(0, 3, 30)
    gammas = [np.array([0.3, 1.5, 1.0, 0.7]), np.array([0.03, 0.2, 1.0, 0.1])]
    factors = DataFactors(X, kernels, gammas)
    plan = AllPairs(30, 8 * 4)
    for chunk in plan.chunks:
        pairs = plan.pairs(chunk)
        expected = [np.prod(Z, axis=1, keepdims=True) for Z in factors(pairs)]
        for joint, product in zip(JointFactors(factors)(pairs), expected):
            np.testing.assert_allclose(joint, product, rtol=1e-13)
    # An infinite parameter (a delta kernel from a zero bandwidth) takes the product.
    infinite = DataFactors(X, kernels, [np.array([np.inf, 1.0, 1.0, 1.0])])
    pairs = plan.pairs(plan.chunks[0])
    np.testing.assert_array_equal(
        JointFactors(infinite)(pairs)[0], np.prod(infinite(pairs)[0], axis=1, keepdims=True)
    )


@pytest.mark.parametrize("value_function", ["anova", "baseline", "observational"])
def test_one_weighting_sums_in_the_point_pass_only_with_removed_factors(
    value_function, monkeypatch
):
    """Without permutations a chunk's values under the observational value function come
    from the compiled point pass; without removed factors (baseline, ANOVA) they keep the
    plan, whose series path is linear in d where quadrature would take up to d / 2 nodes
    (at d = 10^4 the point pass took minutes). The values agree either way."""
    from pkex_select import _pairgame

    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, N_FEATURES))
    y = X[:, 0] + X[:, 1] ** 2 + 0.3 * rng.normal(size=80)
    calls = []
    point_values = _pairgame.point_values

    def spy(*args, **kwargs):
        calls.append(1)
        return point_values(*args, **kwargs)

    monkeypatch.setattr(_pairgame, "point_values", spy)
    fitted = HSICShapleySelector(value_function=value_function, random_state=0).fit(X, y)
    assert bool(calls) == (value_function == "observational")
    monkeypatch.setattr(_pairgame, "point_values", point_values)
    tested = HSICShapleySelector(
        value_function=value_function, n_permutations=9, random_state=0
    ).fit(X, y)  # several weightings: the contributions once, then their products
    np.testing.assert_allclose(
        fitted.shapley_values_, tested.shapley_values_, rtol=0, atol=1e-12 * fitted.hsic_
    )
