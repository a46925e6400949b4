"""value_function="auto": each selection question gets its game."""

import warnings

import numpy as np
import pytest

from pkex_select import HSICShapleySelector, MMDShapleyAttributor
from pkex_select.__main__ import _tests_affordable

rng = np.random.default_rng(7)
X = rng.normal(size=(120, 9))
y = 2 * X[:, 0] + np.sin(2 * X[:, 1]) + 0.3 * rng.normal(size=120)


def _positive_shares(values):
    return np.maximum(values, 0) / np.maximum(values, 0).sum()


def test_k_features_are_ranked_by_the_model_game_at_aligned_bandwidths():
    auto = HSICShapleySelector(3, random_state=0).fit(X, y)
    model = HSICShapleySelector(
        3, value_function="model", bandwidth="alignment", scales=[1], random_state=0
    ).fit(X, y)
    assert auto.value_function_ == "model" and auto.scales_ == (1.0,)
    np.testing.assert_array_equal(auto.shapley_values_, model.shapley_values_)
    np.testing.assert_array_equal(auto.bandwidths_, model.bandwidths_)


def test_model_anova_averages_the_model_and_anova_games_shares():
    auto = HSICShapleySelector(3, value_function="model+anova", scales=[1], random_state=0)
    auto.fit(X, y)
    model = HSICShapleySelector(
        3, value_function="model", bandwidth="alignment", scales=[1], random_state=0
    ).fit(X, y)
    anova = HSICShapleySelector(value_function="anova", scales=[1], random_state=0).fit(X, y)
    assert auto.value_function_ == "model+anova" and auto.scales_ == (1.0,)
    expected = _positive_shares(model.shapley_values_) + _positive_shares(anova.shapley_values_)
    np.testing.assert_allclose(auto.shapley_values_, expected / 2, rtol=1e-14, atol=1e-16)
    np.testing.assert_allclose(auto.shapley_values_.sum(), 1.0, rtol=1e-14)
    np.testing.assert_array_equal(auto.bandwidths_, model.bandwidths_)
    np.testing.assert_array_equal(auto.hsic_, model.hsic_)


def test_interactions_use_the_papers_game():
    auto = HSICShapleySelector(random_state=0, interactions="SII").fit(X, y)
    assert auto.value_function_ == "baseline"
    median = HSICShapleySelector(value_function="baseline", scales=[1]).fit(X, y)
    np.testing.assert_array_equal(auto.bandwidths_, median.bandwidths_)


def test_knockoffs_rank_by_the_model_game():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # fdr may select nothing here
        auto = HSICShapleySelector(fdr=0.5, random_state=0).fit(X, y)
    ranked = HSICShapleySelector(random_state=0).fit(X, y)
    assert auto.value_function_ == "model"
    np.testing.assert_array_equal(auto.shapley_values_, ranked.shapley_values_)
    assert set(auto.knockoff_value_functions_) <= {"model", "lasso"}


@pytest.mark.parametrize("options", [{"alpha": 0.05}, {"n_permutations": 19}])
def test_tests_use_the_anova_game(options):
    auto = HSICShapleySelector(random_state=0, **options).fit(X, y)
    anova = HSICShapleySelector(value_function="anova", random_state=0, **options).fit(X, y)
    assert auto.value_function_ == "anova" and auto.scales_ == (1.0, 3.0)
    np.testing.assert_array_equal(auto.shapley_values_, anova.shapley_values_)
    np.testing.assert_array_equal(auto.adjusted_pvalues_, anova.adjusted_pvalues_)


def test_beyond_100_features_the_anova_game_ranks():
    """Its factors near 1 keep the cost linear in d, where the paper's needs d/2 nodes."""
    wide = np.random.default_rng(8).normal(size=(40, 101))
    assert HSICShapleySelector().fit(wide, wide[:, 0]).value_function_ == "anova"
    assert HSICShapleySelector().fit(wide[:, :100], wide[:, 0]).value_function_ == "model"


def test_an_explicit_game_is_kept():
    for game in ("anova", "baseline", "observational"):
        assert HSICShapleySelector(value_function=game).fit(X, y).value_function_ == game


def test_the_attributor_stays_on_the_anova_game():
    labels = np.repeat([0, 1], 60)
    shifted = X + labels[:, None] * np.r_[1.5, 1.0, np.zeros(7)]
    for options in ({}, {"value_function": "auto"}, {"alpha": 0.05, "random_state": 0}):
        fitted = MMDShapleyAttributor(2, **options).fit(shifted, labels)
        assert fitted.value_function_ == "anova"
        assert set(fitted.get_support(indices=True)) == {0, 1}


def test_shares_are_the_values_over_their_total_magnitude():
    fitted = HSICShapleySelector(value_function="baseline").fit(X, y)
    values = fitted.shapley_values_
    assert np.any(values < 0)  # the paper's game: what a share must stay readable with
    np.testing.assert_allclose(fitted.shares_, values / np.abs(values).sum(), rtol=1e-15)
    np.testing.assert_allclose(np.abs(fitted.shares_).sum(), 1.0, rtol=1e-14)
    constant = HSICShapleySelector().fit(np.ones((20, 3)), y[:20])
    np.testing.assert_array_equal(constant.shares_, np.zeros(3))


def test_the_cli_tests_every_column_where_the_exact_estimate_runs():
    assert _tests_affordable((2000, 20), "auto")
    assert not _tests_affordable((3000, 20), "auto")
    assert not _tests_affordable((20000, 3), "auto")
    assert not _tests_affordable((500, 3), "block")


def _planted(design, n, seed, n_features=30):
    """A planted design: X standard normal, the relevant columns and y."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    if design == "even":
        # Effects the alignment of the model game alone widens away: |x|, a step, cos 2x,
        # and an interaction.
        y = np.abs(X[:, 0]) + (X[:, 1] > 0.5) + np.cos(2 * X[:, 2]) + X[:, 3] * X[:, 4]
        y = y + 0.5 * X[:, 3] + 0.5 * rng.normal(size=n)
        return X, y, np.arange(5)
    # Four near-copies (r ~ 0.96) of one signal beside two more relevant features.
    signal = rng.normal(size=n)
    X[:, :4] = signal[:, None] + 0.29 * rng.normal(size=(n, 4))
    y = signal + X[:, 4] + np.sin(2 * X[:, 5]) + 0.5 * rng.normal(size=n)
    return X, y, np.arange(6)


@pytest.mark.parametrize("design", ["even", "redundant"])
@pytest.mark.parametrize("seed", [0, 1])
def test_every_relevant_feature_ranks_above_the_noise(design, seed):
    """No cliff in "model+anova": an even effect or a redundant copy, which the model game
    alone can value at about 0 below noise columns, keeps a value above every noise column."""
    X, y, relevant = _planted(design, 500, seed)
    selector = HSICShapleySelector(len(relevant), value_function="model+anova", random_state=0)
    selector.fit(X, y)
    values = selector.shapley_values_
    noise = np.setdiff1d(np.arange(X.shape[1]), relevant)
    assert values[relevant].min() > values[noise].max()
    assert set(selector.get_support(indices=True)) == set(relevant)


def test_the_model_game_takes_one_scale_and_uses_it():
    default = HSICShapleySelector(2, value_function="model", random_state=0).fit(X, y)
    assert default.scales_ == (1.0,)
    wider = HSICShapleySelector(2, value_function="model", scales=[3], random_state=0).fit(X, y)
    assert wider.scales_ == (3.0,)
    assert not np.allclose(wider.shapley_values_, default.shapley_values_)
    for scales in ([1, 2], [1, 2, 3]):
        with pytest.raises(ValueError, match="fits one kernel ridge.*Give one scale"):
            HSICShapleySelector(2, scales=scales).fit(X, y)
