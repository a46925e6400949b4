"""The kernel-ANOVA game: U-centred factors 1 + k~_j, a removed feature's factor 1,
off-diagonal pairs only. Every estimator against 2^d enumeration of the game built from
U-centred Gram matrices, and the properties that make its values readable."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pkex_select import (
    HSICShapleySelector,
    MMDShapleyAttributor,
    _integrals,
    hsic_shapley_values,
    interaction_values,
    mmd_shapley_values,
)
from pkex_select._plan import SampleBlocks
from pkex_select.kernels import gram_matrices
from tests.references import (
    general_coalition_values,
    interaction_reference,
    shapley_from_coalition_values,
    truncated_game,
)
from tests.test_hsic import unbiased_hsic

rng = np.random.default_rng(0)
N, D = 24, 5
X = rng.normal(size=(N, D))
y = X[:, 0] * X[:, 1] + np.sin(X[:, 2]) + 0.1 * rng.normal(size=N)
K = gram_matrices(X, "rbf", 0.4)
L = gram_matrices(y[:, None], "rbf", 0.5)[0]
groups = np.repeat([0, 1], N // 2)


def _u_centred(K):
    """Szekely and Rizzo's U-centring (the diagonal is never used), computed from the whole
    matrices: what the estimators apply over the sample, or within each block."""
    n = K.shape[-1]
    off = K * (1.0 - np.eye(n))
    sums = off.sum(axis=-1)
    total = sums.sum(axis=-1)[..., None, None]
    return (
        off
        - sums[..., :, None] / (n - 2)
        - sums[..., None, :] / (n - 2)
        + total / ((n - 1) * (n - 2))
    )


def _game(K, statistic, weight=1.0):
    """v(S) = statistic(prod_{j in S} (1 + w k~_j)) for every coalition, as a bit mask, with
    k~_j the U-centred K_j."""
    centred = weight * _u_centred(K)
    d = K.shape[0]
    values = np.empty(2**d)
    for mask in range(2**d):
        gram = np.ones(K.shape[1:])
        for j in range(d):
            if mask >> j & 1:
                gram = gram * (1.0 + centred[j])
        values[mask] = statistic(gram)
    return values


def _off_diagonal(weights):
    """The linear statistic sum_{a != b} W_ab G_ab."""
    return lambda gram: (weights * gram).sum() - np.trace(weights * gram)


def _assert_values(values, game):
    expected = shapley_from_coalition_values(game, D)
    np.testing.assert_allclose(values, expected, rtol=0, atol=1e-12 * np.abs(game).max())
    assert values.sum() == pytest.approx(game[-1] - game[0], abs=1e-12 * np.abs(game).max())


def test_biased_hsic_matches_enumeration():
    H = np.eye(N) - 1.0 / N
    game = _game(K, _off_diagonal(H @ L @ H / (N - 1) ** 2))
    _assert_values(hsic_shapley_values(K, L, value_function="anova"), game)


def test_unbiased_hsic_matches_enumeration():
    game = _game(K, lambda gram: unbiased_hsic(gram, L))
    _assert_values(hsic_shapley_values(K, L, estimate="unbiased", value_function="anova"), game)


def _assert_block_hsic_matches_enumeration(weight=1.0, anova_weight="auto", value_function="anova"):
    """Block HSIC of the ANOVA game: the mean over the blocks of each block's enumerated game
    of U-centred factors (1 + w k~) under the unbiased HSIC ("pairwise_anova": each block's
    game truncated at pairwise interactions)."""
    members = SampleBlocks(N, 6, 2, np.random.RandomState(3), pair_bytes=8).members
    games = [
        _game(
            K[:, m][:, :, m],
            lambda gram, m=m: unbiased_hsic(gram, L[np.ix_(m, m)]),
            weight=weight,
        )
        for m in members
    ]
    if value_function == "pairwise_anova":
        games = [truncated_game(game, D, 2) for game in games]
    values = hsic_shapley_values(
        K,
        L,
        estimate="block",
        block_size=6,
        n_repetitions=2,
        random_state=3,
        value_function=value_function,
        anova_weight=anova_weight,
    )
    _assert_values(values, np.mean(games, axis=0))


def test_block_hsic_u_centres_each_block_and_matches_enumeration():
    _assert_block_hsic_matches_enumeration()


@pytest.mark.parametrize("estimator", ["biased", "unbiased"])
def test_mmd_matches_enumeration(estimator):
    counts = np.bincount(groups)
    c = np.where(groups == 0, 1.0 / counts[0], -1.0 / counts[1])
    if estimator == "biased":
        weights = np.outer(c, c)
    else:  # within a sample 1 / (n_g (n_g - 1)), between samples -1 / (n_P n_Q)
        same = groups[:, None] == groups[None, :]
        within = 1.0 / (counts * (counts - 1))
        weights = np.where(same, within[groups][:, None], -1.0 / (counts[0] * counts[1]))
    game = _game(K, _off_diagonal(weights))
    _assert_values(mmd_shapley_values(K, groups, estimate=estimator, value_function="anova"), game)


def test_interactions_match_enumeration():
    H = np.eye(N) - 1.0 / N
    weights = H @ L @ H / (N - 1) ** 2
    a, b = np.triu_indices(N, k=1)
    factors = (1.0 + _u_centred(K))[:, a, b].T
    game = general_coalition_values(factors, np.ones_like(factors), 2.0 * weights[a, b])
    for index in ["SII", "k-SII", "STII"]:
        expected = interaction_reference(game, D, index)
        result = hsic_shapley_values(
            K, L, value_function="anova", interactions=index, return_result=True
        )
        np.testing.assert_allclose(
            result.interaction_values, expected, rtol=0, atol=1e-12 * np.abs(game).max()
        )
        np.testing.assert_allclose(
            interaction_values(factors, 2.0 * weights[a, b], index=index),
            expected,
            rtol=0,
            atol=1e-12 * np.abs(game).max(),
        )


def test_estimators_attribute_the_game_of_their_own_gram_matrices():
    selector = HSICShapleySelector(value_function="anova", scales=[1.0]).fit(X, y)
    Xs = (X - X.mean(axis=0)) / X.std(axis=0)
    grams = gram_matrices(Xs, "rbf", selector.gammas_)
    ys = (y - y.mean()) / y.std()
    target = gram_matrices(ys[:, None], "rbf", 1.0 / (2 * selector.target_bandwidth_**2))[0]
    np.testing.assert_allclose(
        selector.shapley_values_,
        hsic_shapley_values(grams, target, value_function="anova"),
        rtol=1e-12,
        atol=1e-14,
    )


def test_an_identifier_column_does_not_zero_the_other_features():
    n = 200
    data = rng.normal(size=(n, 3))
    target = np.sin(2 * data[:, 0]) + 0.1 * rng.normal(size=n)
    with_id = np.column_stack([data, np.arange(n)])
    with pytest.warns(UserWarning, match="column 3 has 200 distinct values in 200 rows"):
        fitted = HSICShapleySelector(
            value_function="anova", categorical_features=[3], scales=[1.0]
        ).fit(with_id, target)
    alone = HSICShapleySelector(value_function="anova", scales=[1.0]).fit(data, target)
    # An identifier's delta kernel is 0 on every pair of distinct rows; U-centred it is 0,
    # its factor is the removed factor 1: a dummy. It gets 0 and changes no other value.
    # (Double centring, H K H, would leave (k - 1) / n = -1/200 off the diagonal.)
    scale = np.abs(alone.shapley_values_).max()
    assert abs(fitted.shapley_values_[3]) <= 1e-12 * scale
    np.testing.assert_allclose(
        fitted.shapley_values_[:3], alone.shapley_values_, rtol=0, atol=1e-12 * scale
    )


def test_a_kernel_constant_on_distinct_pairs_is_a_dummy():
    """A value is linear in the feature's U-centred factor, which is 0 for a kernel constant
    on distinct pairs (whatever the constant): such a feature gets exactly 0. Double
    centring leaves (c - 1) / n off the diagonal, and fails this."""
    for constant in (0.0, 0.3, 0.9):
        grams = K.copy()
        grams[2] = constant + (1.0 - constant) * np.eye(N)
        values = hsic_shapley_values(grams, L, value_function="anova")
        assert abs(values[2]) <= 1e-13 * np.abs(values).max()


def test_noise_features_get_values_near_zero_and_relevant_ones_positive():
    n = 300
    data = rng.normal(size=(n, 8))
    target = (
        3 * data[:, 0] + np.sin(2 * data[:, 1]) + 0.5 * data[:, 2] ** 2 + 0.3 * rng.normal(size=n)
    )
    values = HSICShapleySelector(value_function="anova").fit(data, target).shapley_values_
    assert np.all(values[:3] > 0)
    assert np.abs(values[3:]).max() < 0.05 * values[0]


def test_mmd_anova_points_at_the_shifted_features():
    data = rng.normal(size=(300, 6))
    data[150:, 0] += 1.5
    data[150:, 3] += 0.5
    labels = np.repeat(["p", "q"], 150)
    fitted = MMDShapleyAttributor(2, value_function="anova").fit(data, labels)
    np.testing.assert_array_equal(fitted.get_support(indices=True), [0, 3])


def test_many_features_weight_the_centred_kernels_and_match_enumeration(monkeypatch):
    """Beyond ANOVA_FULL_WEIGHT_FEATURES features the factors are 1 + (that / d) k~_j; here
    the threshold is lowered to 2 so that the weighted game of 5 features is enumerated."""
    from pkex_select import _features

    monkeypatch.setattr(_features, "ANOVA_FULL_WEIGHT_FEATURES", 2)
    assert _features.anova_weight(D) == 2 / D and _features.anova_weight(1) == 1.0
    H = np.eye(N) - 1.0 / N
    game = _game(K, _off_diagonal(H @ L @ H / (N - 1) ** 2), weight=2 / D)
    _assert_values(hsic_shapley_values(K, L, value_function="anova"), game)
    _assert_block_hsic_matches_enumeration(weight=2 / D)


def test_a_given_weight_is_the_game_of_that_weight():
    """``anova_weight=0.3`` enumerates as the game of factors 1 + 0.3 k~_j, for the exact
    and block HSIC and for MMD; the other games ignore it."""
    H = np.eye(N) - 1.0 / N
    game = _game(K, _off_diagonal(H @ L @ H / (N - 1) ** 2), weight=0.3)
    _assert_values(hsic_shapley_values(K, L, value_function="anova", anova_weight=0.3), game)
    _assert_block_hsic_matches_enumeration(weight=0.3, anova_weight=0.3)
    signs = np.where(groups == 0, 1.0 / (N // 2), -1.0 / (N // 2))
    game = _game(K, _off_diagonal(np.outer(signs, signs)), weight=0.3)
    _assert_values(mmd_shapley_values(K, groups, value_function="anova", anova_weight=0.3), game)
    np.testing.assert_array_equal(
        hsic_shapley_values(K, L, anova_weight=0.3), hsic_shapley_values(K, L)
    )


@pytest.mark.parametrize("weight", [0.0, -0.5, 1.5, "full"])
def test_a_weight_outside_0_1_is_refused(weight):
    with pytest.raises(ValueError, match="anova_weight"):
        HSICShapleySelector(anova_weight=weight).fit(X, y)


def test_the_automatic_weight_is_6_over_d_beyond_6_features():
    """At d = 20 "auto" is w = 0.3: the same values as anova_weight=0.3, not as 1."""
    data = np.random.default_rng(2).normal(size=(60, 20))
    target = data[:, 0] * data[:, 1] + data[:, 2]
    values = {
        w: HSICShapleySelector(value_function="anova", anova_weight=w)
        .fit(data, target)
        .shapley_values_
        for w in ("auto", 0.3, 1.0)
    }
    np.testing.assert_array_equal(values["auto"], values[0.3])
    assert not np.allclose(values["auto"], values[1.0])


def test_thousands_of_features_take_the_linear_time_path():
    """At d = 2000 and n = 150 the weighted factors are near 1: the fit takes a second (the
    plan's series path) and the two features y depends on rank first."""
    data = np.random.default_rng(5).normal(size=(150, 2000))
    target = data[:, 0] + data[:, 1] ** 2
    selector = HSICShapleySelector(2, value_function="anova").fit(data, target)
    assert set(selector.get_support(indices=True)) == {0, 1}


def test_u_centring_within_blocks_needs_four_samples_per_block():
    """With three samples every U-centred factor is 0: the game would be all zeros."""
    with pytest.raises(ValueError, match="block_size >= 4"):
        mmd_shapley_values(K, groups, estimate="block", block_size=3, value_function="anova")
    values = mmd_shapley_values(K, groups, estimate="block", block_size=4, value_function="anova")
    assert np.all(np.isfinite(values)) and np.any(values != 0)


def test_block_estimator_gives_noise_features_no_share_on_average():
    """U-centring within blocks: a noise feature's share averages 0 (measured +0.00006 with
    standard error 0.0004 over 40 data sets; double centring gave -0.0074). Ten data sets
    here: the bound is about 4 standard errors, and the old centring fails it."""
    shares = []
    for seed in range(10):
        data = np.random.default_rng(seed).normal(size=(2000, 8))
        target = (
            data[:, 0] + data[:, 1] ** 2 + 0.5 * np.random.default_rng(seed + 99).normal(size=2000)
        )
        selector = HSICShapleySelector(
            estimate="block", value_function="anova", random_state=seed
        ).fit(data, target)
        shares.append(selector.shares_[2:].mean())
    assert abs(np.mean(shares)) < 0.003


@pytest.mark.skipif(not _integrals.NUMBA, reason="needs numba")
@given(st.integers(4, 7), st.integers(1, 5), st.integers(1, 6), st.integers(0, 2**32 - 1))
@settings(max_examples=40, deadline=None)
def test_compiled_block_centring_is_its_numpy_twin(block_size, n_blocks, n_features, seed):
    """U-centring within blocks, compiled and in NumPy, on a transposed Z too (as the
    per-feature Gram matrices give it): the factors in place and both joint kernels."""
    from pkex_select._features import centre_blocks_numba, centre_blocks_numpy

    rng = np.random.default_rng(seed)
    n_pairs = n_blocks * block_size * (block_size - 1) // 2
    Z = rng.uniform(0, 1, (n_features, n_pairs)).T  # not C-contiguous
    constant = rng.random(n_features) < 0.3
    weight = float(rng.uniform(0.1, 1.0))
    twin_Z = Z.copy(order="F")
    compiled = centre_blocks_numba(Z, block_size, weight, constant)
    twin = centre_blocks_numpy(twin_Z, block_size, weight, constant)
    np.testing.assert_allclose(Z, twin_Z, rtol=1e-14, atol=1e-15)
    assert np.all(Z[:, constant] == 1.0)
    for products, twin_products in zip(compiled, twin):
        np.testing.assert_allclose(products, twin_products, rtol=1e-13, atol=1e-300)
    # Each block's centred factors (less 1, over the weight) sum to 0 along each sample's row.
    centred = ((Z - 1.0) / weight).reshape(n_blocks, -1, n_features)
    first, second = np.triu_indices(block_size, k=1)
    for i in range(block_size):
        in_row = (first == i) | (second == i)
        np.testing.assert_allclose(centred[:, in_row].sum(axis=1), 0.0, atol=1e-13)
