"""The ANOVA game's pair dividends (``_pair_evidence.py``): against the engine's Moebius
interaction index of the ANOVA game and their definition, and their spread where a feature is
independent of the rest; a single feature's score against its definition and the unbiased
HSIC."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pkex_select import hsic_shapley_values
from pkex_select._features import DataFactors
from pkex_select._pair_evidence import dependence_scores, pair_dividends, pair_scores
from pkex_select.kernels import KERNELS, kernel_factor


def _grams(X, kernels, gammas):
    return np.stack(
        [kernel_factor(X[:, [j]], X[:, j], k, g) for j, (k, g) in enumerate(zip(kernels, gammas))]
    )


def _u_centred(K):
    n = K.shape[0]
    K = K - np.diag(np.diag(K))
    sums = K.sum(axis=1)
    U = K - sums[:, None] / (n - 2) - sums[None, :] / (n - 2) + sums.sum() / ((n - 1) * (n - 2))
    return U - np.diag(np.diag(U))


@given(
    st.integers(4, 14),
    st.integers(2, 5),
    st.lists(st.sampled_from(KERNELS), min_size=5, max_size=5),
    st.integers(0, 2**32 - 1),
)
@settings(max_examples=40, deadline=None)
def test_dividends_are_the_anova_games_moebius_interactions(n, d, kernels, seed):
    rng = np.random.default_rng(seed)
    kernels = kernels[:d]
    X = rng.standard_normal((n, d))
    X[:, np.equal(kernels, "delta")] = rng.integers(0, 3, (n, kernels.count("delta")))
    gammas = rng.uniform(0.2, 3.0, d)
    y = X[:, 0] * X[:, 1] + 0.5 * rng.standard_normal(n)
    L = np.exp(-(np.subtract.outer(y, y) ** 2))
    moebius = hsic_shapley_values(
        _grams(X, kernels, gammas),
        L,
        estimate="unbiased",
        value_function="anova",
        anova_weight=1.0,
        interactions="Moebius",
        return_result=True,
    ).interaction_values
    dividends, spreads = pair_dividends(DataFactors(X, kernels, [gammas]), L, d)
    off = ~np.eye(d, dtype=bool)
    scale = np.abs(moebius[off]).max()
    np.testing.assert_allclose(dividends[off], moebius[off], rtol=0, atol=1e-12 * scale)
    # The spread from its definition.
    centred = [_u_centred(K) for K in _grams(X, kernels, gammas)]
    target = _u_centred(L)
    expected = [
        [np.sqrt(2 * np.sum((Ki * Kj * target) ** 2)) / (n * (n - 3)) for Kj in centred]
        for Ki in centred
    ]
    np.testing.assert_allclose(spreads, expected, rtol=1e-12, atol=0)


def test_only_the_first_features_are_paired_with_all_and_a_constant_one_with_none():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 6))
    L = np.exp(-(np.subtract.outer(X[:, 0], X[:, 0]) ** 2))
    factors = DataFactors(X, ["rbf"] * 6, [np.ones(6)])
    all_pairs = pair_dividends(factors, L, 6)
    first_two = pair_dividends(factors, L, 2)
    for full, part in zip(all_pairs, first_two):
        np.testing.assert_allclose(part, full[:2], rtol=1e-13)
    # A constant feature: its centred factor is 0, and so are its dividends and spreads.
    X[:, 3] = 1.0
    constant = np.arange(6) == 3
    for result in pair_dividends(DataFactors(X, ["rbf"] * 6, [np.ones(6)], constant), L, 6):
        assert not result[:, 3].any() and not result[3].any()
    # Its scores are 0 too (no spread to divide by); the others' are dividend over spread.
    with_constant = DataFactors(X, ["rbf"] * 6, [np.ones(6)], constant)
    scores = pair_scores(with_constant, L, 6)
    dividends, spreads = pair_dividends(with_constant, L, 6)
    assert not scores[:, 3].any() and not scores[3].any()
    others = np.ix_(~constant, ~constant)
    np.testing.assert_array_equal(scores[others], dividends[others] / spreads[others])


def test_scores_of_independent_features_have_unit_spread_and_an_interaction_stands_out():
    rng = np.random.default_rng(7)
    n, d = 400, 40
    X = rng.standard_normal((n, d))
    y = X[:, 0] * X[:, 1] + X[:, 2] ** 2 + rng.standard_normal(n)
    y = (y - y.mean()) / y.std()
    L = np.exp(-(np.subtract.outer(y, y) ** 2) / 2)
    dividends, spreads = pair_dividends(DataFactors(X, ["rbf"] * d, [np.full(d, 0.5)]), L, d)
    scores = dividends / spreads
    # The pairs of two features y does not depend on (the 37 * 36 / 2 above the diagonal).
    null = scores[3:, 3:][np.triu_indices(d - 3, 1)]
    assert 0.85 < null.std() < 1.2
    assert abs(null.mean()) < 0.15
    assert null.max() < 8.0  # the selector's bar
    assert scores[0, 1] > 20.0
    # Neither factor of the interaction with a feature y does not depend on.
    assert np.abs(scores[:2, 3:]).max() < 8.0


@given(
    st.integers(4, 12),
    st.lists(st.sampled_from(KERNELS), min_size=1, max_size=3),
    st.integers(1, 2),
    st.integers(0, 2**32 - 1),
)
@settings(max_examples=40, deadline=None)
def test_dependence_scores_are_the_unbiased_hsic_over_its_spread(n, kernels, n_outputs, seed):
    """Equal to sum_{a != b} k~ l~ / sqrt(2 sum_{a != b} (k~ l~)^2) from U-centred Gram
    matrices (to 1e-12 of the terms' magnitude: the sum cancels), its numerator n (n - 3)
    times Song et al.'s unbiased HSIC (JMLR 13, 2012, eq. 5); a linear kernel of residuals
    as the target, as _ridge_game takes it."""
    rng = np.random.default_rng(seed)
    d = len(kernels)
    X = rng.standard_normal((n, d))
    X[:, np.equal(kernels, "delta")] = rng.integers(0, 3, (n, kernels.count("delta")))
    gammas = rng.uniform(0.2, 3.0, d)
    residuals = rng.standard_normal((n, n_outputs))
    L = residuals @ residuals.T
    scores = dependence_scores(DataFactors(X, kernels, [gammas]), L)
    target = _u_centred(L)
    ones = np.ones(n)
    for j, K in enumerate(_grams(X, kernels, gammas)):
        terms = (_u_centred(K) * target)[~np.eye(n, dtype=bool)]
        spread = np.sqrt(2.0 * np.square(terms).sum())
        if spread == 0:
            assert scores[j] == 0.0
            continue
        tolerance = 1e-12 * np.abs(terms).sum() / spread
        np.testing.assert_allclose(scores[j], terms.sum() / spread, rtol=1e-12, atol=tolerance)
        if n > 4:
            K0, L0 = K - np.diag(np.diag(K)), L - np.diag(np.diag(L))
            unbiased = (
                np.trace(K0 @ L0)
                + (ones @ K0 @ ones) * (ones @ L0 @ ones) / ((n - 1) * (n - 2))
                - 2.0 / (n - 2) * (ones @ K0 @ L0 @ ones)
            ) / (n * (n - 3))
            scale = np.abs(terms).sum()
            np.testing.assert_allclose(terms.sum(), n * (n - 3) * unbiased, atol=1e-12 * scale)
    constant = DataFactors(np.ones((n, 1)), ["rbf"], [np.ones(1)], np.array([True]))
    assert dependence_scores(constant, L).tolist() == [0.0]
