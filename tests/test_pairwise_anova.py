"""The ANOVA game truncated at pairwise interactions ("pairwise_anova", the tests' game):
the engine's closed form and every estimator against 2^d enumeration of the truncated game,
its interaction indices against the definitions and shapiq, and why the tests use it."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pkex_select import (
    HSICShapleySelector,
    MMDShapleyAttributor,
    hsic_shapley_values,
    mmd_shapley_values,
)
from pkex_select._engine import order_two_contributions
from pkex_select._interactions import INDICES, assemble, order_two_interactions
from tests.references import (
    general_coalition_values,
    interaction_reference,
    shapley_from_coalition_values,
    truncated_game,
)
from tests.test_anova import (
    D,
    K,
    L,
    N,
    _assert_block_hsic_matches_enumeration,
    _game,
    _off_diagonal,
    _u_centred,
    groups,
)


def _assert_values(values, game, n_features=D):
    expected = shapley_from_coalition_values(game, n_features)
    scale = np.abs(game).max()
    np.testing.assert_allclose(values, expected, rtol=0, atol=1e-12 * scale)
    assert values.sum() == pytest.approx(game[-1] - game[0], abs=1e-12 * scale)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
@given(st.integers(1, 8), st.integers(1, 30), st.floats(0.01, 3.0), st.integers(0, 2**32 - 1))
@settings(max_examples=60, deadline=None)
def test_order_two_contributions_are_the_truncated_games_shapley_values(
    backend, n_features, n_pairs, spread, seed
):
    rng = np.random.default_rng(seed)
    Z = 1.0 + spread * rng.standard_normal((n_pairs, n_features))
    weights = rng.standard_normal(n_pairs)
    full = general_coalition_values(Z, np.ones_like(Z), weights)
    game = truncated_game(full, n_features, 2)
    _assert_values(weights @ order_two_contributions(Z, backend=backend), game, n_features)


@given(st.integers(1, 40), st.integers(1, 50), st.floats(0.01, 3.0), st.integers(0, 2**32 - 1))
@settings(max_examples=40, deadline=None)
def test_the_compiled_order_two_pass_agrees_with_its_numpy_twin_in_a_slice_of_a_wider_array(
    n_features, n_pairs, spread, seed
):
    rng = np.random.default_rng(seed)
    Z = 1.0 + spread * rng.standard_normal((n_pairs, n_features))
    columns = np.full((n_pairs, n_features + 3), np.nan)
    compiled = order_two_contributions(Z, out=columns[:, 2 : 2 + n_features], backend="numba")
    twin = order_two_contributions(Z, backend="numpy")
    # Each entry's error is a few roundings of u_j times the sum of |u_l|.
    scale = np.abs(Z - 1).sum(axis=1, keepdims=True) * np.abs(Z - 1) + np.abs(Z - 1)
    assert np.all(np.abs(compiled - twin) <= 1e-13 * scale)
    assert np.shares_memory(compiled, columns)
    assert np.isnan(columns[:, :2]).all() and np.isnan(columns[:, 2 + n_features :]).all()


def test_with_two_features_it_is_the_anova_game():
    two = K[:2]
    for name in ("anova", "pairwise_anova"):
        assert hsic_shapley_values(two, L, value_function=name).shape == (2,)
    np.testing.assert_allclose(
        hsic_shapley_values(two, L, value_function="pairwise_anova"),
        hsic_shapley_values(two, L, value_function="anova"),
        rtol=1e-13,
    )


def test_hsic_and_mmd_estimators_match_enumeration():
    H = np.eye(N) - 1.0 / N
    game = truncated_game(_game(K, _off_diagonal(H @ L @ H / (N - 1) ** 2)), D, 2)
    _assert_values(hsic_shapley_values(K, L, value_function="pairwise_anova"), game)
    signs = np.where(groups == 0, 1.0 / (N // 2), -1.0 / (N // 2))
    game = truncated_game(_game(K, _off_diagonal(np.outer(signs, signs)), weight=0.3), D, 2)
    values = mmd_shapley_values(K, groups, value_function="pairwise_anova", anova_weight=0.3)
    _assert_values(values, game)


def test_block_estimator_u_centres_each_block_and_matches_enumeration():
    _assert_block_hsic_matches_enumeration(value_function="pairwise_anova")


@pytest.mark.parametrize("index", sorted(set(INDICES) - {"SV", "BV"}))
def test_interactions_match_their_definitions(index):
    H = np.eye(N) - 1.0 / N
    weights = H @ L @ H / (N - 1) ** 2
    a, b = np.triu_indices(N, k=1)
    factors = (1.0 + _u_centred(K))[:, a, b].T
    full = general_coalition_values(factors, np.ones_like(factors), 2.0 * weights[a, b])
    game = truncated_game(full, D, 2)
    expected = interaction_reference(game, D, index)
    scale = np.abs(game).max()
    result = hsic_shapley_values(
        K, L, value_function="pairwise_anova", interactions=index, return_result=True
    )
    np.testing.assert_allclose(result.interaction_values, expected, rtol=0, atol=1e-12 * scale)
    pairwise, order_one = order_two_interactions(factors, 2.0 * weights[a, b][:, None], index)
    chunk = assemble(pairwise[None, ..., 0], order_one[None, :, 0], index)[0]
    np.testing.assert_allclose(chunk, expected, rtol=0, atol=1e-12 * scale)


@pytest.mark.parametrize("index", ["SII", "k-SII", "STII", "Moebius"])
def test_interactions_match_shapiq_exact_computer(index):
    shapiq = pytest.importorskip("shapiq")
    rng = np.random.default_rng(6)
    n_features = 6
    Z = 1.0 + 0.8 * rng.standard_normal((20, n_features))
    weights = rng.normal(size=20)
    game = truncated_game(general_coalition_values(Z, np.ones_like(Z), weights), n_features, 2)

    def value(coalitions):
        masks = coalitions.astype(np.int64) @ (1 << np.arange(n_features))
        return game[masks]

    theirs = shapiq.ExactComputer(n_players=n_features, game=value)(index=index, order=2)
    pairwise, order_one = order_two_interactions(Z, weights[:, None], index)
    ours = assemble(pairwise[None, ..., 0], order_one[None, :, 0], index)[0]
    for i in range(n_features):
        assert ours[i, i] == pytest.approx(theirs[(i,)], abs=1e-13)
        for j in range(i + 1, n_features):
            assert ours[i, j] == pytest.approx(theirs[(i, j)], abs=1e-13)


def _copied_nulls(seed, n_samples=1500):
    """y = x0 + |x1| + noise; x2, x3 independent nulls; x4 and x5 the same null column."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_samples, 6))
    X[:, 5] = X[:, 4]
    return X, X[:, 0] + np.abs(X[:, 1]) + rng.standard_normal(n_samples)


def test_tests_take_the_pairwise_game_and_keep_no_null_that_copies_another():
    """Two copies of a null column share the full ANOVA game's three-way terms with the
    relevant features, which permuting y removes: the full game keeps the copies at
    alpha = 0.05, the pairwise game (the tests' default) does not."""
    X, y = _copied_nulls(0)
    fitted = HSICShapleySelector(alpha=0.05, n_permutations=199, random_state=0).fit(X, y)
    assert fitted.value_function_ == "pairwise_anova"
    np.testing.assert_array_equal(fitted.get_support(indices=True), [0, 1])
    full = HSICShapleySelector(
        alpha=0.05, n_permutations=199, random_state=0, value_function="anova"
    ).fit(X, y)
    np.testing.assert_array_equal(full.get_support(indices=True), [0, 1, 4, 5])


def test_untested_fits_keep_their_games():
    X, y = _copied_nulls(1, n_samples=200)
    assert HSICShapleySelector(value_function="anova").fit(X, y).value_function_ == "anova"
    attributor = MMDShapleyAttributor(2).fit(X, y > np.median(y))
    assert attributor.value_function_ == "anova"
    tested = MMDShapleyAttributor(2, n_permutations=99, random_state=0).fit(X, y > np.median(y))
    assert tested.value_function_ == "pairwise_anova"


def test_tests_keep_a_pure_pairwise_interaction():
    """XOR of two features among six: neither alone tells anything about y, their pairwise
    term does, and the tests' game keeps it."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 6))
    fitted = HSICShapleySelector(alpha=0.05, n_permutations=199, random_state=0).fit(
        X, np.sign(X[:, 0] * X[:, 1])
    )
    np.testing.assert_array_equal(fitted.get_support(indices=True), [0, 1])
