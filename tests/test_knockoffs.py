"""Model-X knockoffs: the sampler, S, the filter, and fdr= on the estimators."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.linear_model import LassoCV, MultiTaskLassoCV
from sklearn.utils.validation import check_memory

from pkex_select import HSICShapleySelector, MMDShapleyAttributor, _pairgame
from pkex_select._knockoff_statistics import knockoff_statistic
from pkex_select.knockoffs import (
    _blocks,
    derandomised_selection,
    gaussian_knockoffs,
    group_features,
    knockoff_correlation,
    knockoff_threshold,
    lasso_statistic,
    maxent_blocks,
    sample_knockoffs,
)


def ar1(d, rho):
    return rho ** np.abs(np.subtract.outer(np.arange(d), np.arange(d)))


def entropy(sigma, S):
    return np.linalg.slogdet(S)[1] + np.linalg.slogdet(2 * sigma - S)[1]


def test_knockoffs_have_the_joint_covariance_they_promise():
    rng = np.random.default_rng(0)
    n = 40_000
    X = rng.multivariate_normal(np.zeros(6), ar1(6, 0.6), size=n)
    X[:, 5] = 0.97 * X[:, 4] + np.sqrt(1 - 0.97**2) * rng.normal(size=n)  # grouped below
    correlation, shrunk = knockoff_correlation(X)
    assert not shrunk
    labels = group_features(correlation)
    assert labels[4] == labels[5] and len(set(labels)) == 5
    S = maxent_blocks(correlation, labels)
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    knockoffs = sample_knockoffs(Z, correlation, S, 1, np.random.default_rng(1))[0]
    joint = np.cov(np.hstack([Z, knockoffs]).T, bias=True)
    expected = np.block([[correlation, correlation - S], [correlation - S, correlation]])
    # Each entry is a mean of n products of unit-variance variables: sd <= sqrt(2 / n).
    assert np.abs(joint - expected).max() < 6 * np.sqrt(2 / n)
    # Exchangeable: swapping any column with its knockoff leaves the covariance as it is.
    swap = np.arange(12)
    swap[[2, 8]] = swap[[8, 2]]
    np.testing.assert_allclose(expected[np.ix_(swap, swap)], expected, atol=1e-15)


@pytest.mark.parametrize("rho", [0.0, 0.5, 0.9])
def test_maxent_is_the_maximum_and_beats_equicorrelated(rho):
    sigma = ar1(8, rho)
    S = maxent_blocks(sigma)
    assert np.linalg.eigvalsh(2 * sigma - S).min() > 0
    assert np.all(np.diag(S) > 0) and np.all(np.diag(S) <= 1)
    s = np.diag(S) / 0.999  # the optimum, before the margin
    best = entropy(sigma, np.diag(s))
    for j in range(8):
        for step in (1e-4, -1e-4):
            moved = s.copy()
            moved[j] += step * s[j]
            assert entropy(sigma, np.diag(moved)) < best
    equicorrelated = min(1.0, 2 * np.linalg.eigvalsh(sigma).min()) * 0.999
    assert best >= entropy(sigma, equicorrelated * np.eye(8))


def test_maxent_of_independent_features_is_one():
    np.testing.assert_allclose(np.diag(maxent_blocks(np.eye(4))), 0.999)


def test_group_blocks_are_the_maximum_over_group_scales():
    sigma = ar1(6, 0.7)
    labels = np.array([0, 0, 1, 2, 2, 2])
    S = maxent_blocks(sigma, labels)
    members = [np.flatnonzero(labels == g) for g in range(3)]
    gammas = np.array([S[m[0], m[0]] for m in members]) / 0.999
    np.testing.assert_allclose(S, 0.999 * _blocks(sigma, members, gammas), atol=1e-15)
    best = entropy(sigma, _blocks(sigma, members, gammas))
    for g in range(3):
        for step in (1e-4, -1e-4):
            moved = gammas.copy()
            moved[g] *= 1 + step
            assert entropy(sigma, _blocks(sigma, members, moved)) < best


def test_singular_correlation_is_refused():
    with pytest.raises(ValueError, match="singular"):
        maxent_blocks(np.ones((3, 3)))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 6))
    X[:, 5] = X[:, 0] + X[:, 1]  # singular only up to rounding
    with pytest.raises(ValueError, match="drop the redundant columns"):
        HSICShapleySelector(fdr=0.2).fit(X, X[:, 0] + rng.normal(size=200))


def test_shrinks_only_with_few_samples_per_feature():
    X = np.random.default_rng(0).normal(size=(30, 20))
    correlation, shrunk = knockoff_correlation(X)
    assert shrunk and np.linalg.eigvalsh(correlation).min() > 0
    np.testing.assert_allclose(np.diag(correlation), 1.0)


def brute_threshold(W, q, offset):
    candidates = [t for t in sorted(np.abs(W)) if t > 0]
    passing = [t for t in candidates if (offset + np.sum(W <= -t)) / max(1, np.sum(W >= t)) <= q]
    return min(passing) if passing else np.inf


@settings(max_examples=200, deadline=None)
@given(
    arrays(np.float64, st.integers(1, 30), elements=st.integers(-6, 6).map(float)),
    st.sampled_from([0.1, 0.2, 0.5]),
)
def test_one_draw_selects_what_knockoff_plus_selects(W, q):
    threshold = knockoff_threshold(W, q)
    assert threshold == brute_threshold(W, q, 1)
    selected, e_values, thresholds = derandomised_selection(W[None], q)
    np.testing.assert_array_equal(selected, W >= threshold)
    assert thresholds[0] == threshold


def test_e_values_of_several_draws_are_their_mean():
    W = np.array([[5.0, 4, 3, 2, 1, -0.5], [5.0, -4, 3, 2, 1, 0.5]])
    selected, e_values, thresholds = derandomised_selection(W, 0.5)
    # Each draw: five of six at or above 0.5 and one at or below -0.5, (1 + 1) / 5 <= 0.5.
    np.testing.assert_array_equal(thresholds, [0.5, 0.5])
    # e = 6 / (1 + 1) where W >= 0.5: features 1 and 5 pass in one draw of two.
    np.testing.assert_allclose(e_values, [3, 1.5, 3, 3, 3, 1.5])
    # e-BH: the four e-values of 3 reach 6 / (0.5 * 4) = 3; a fifth would need 2.4.
    np.testing.assert_array_equal(selected, [True, False, True, True, True, False])


def test_gaussian_knockoffs_function():
    X = np.random.default_rng(0).normal(size=(200, 4))
    draws = gaussian_knockoffs(X, groups="auto", n_draws=3, random_state=0)
    assert draws.shape == (3, 200, 4)
    np.testing.assert_array_equal(draws, gaussian_knockoffs(X, n_draws=3, random_state=0))


# ------------------------------------------------------------------ on the estimators


def relevant_data(seed, n=300, d=20, n_relevant=10):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = X[:, :n_relevant] @ np.full(n_relevant, 1.0) + np.sin(2 * X[:, 0]) + rng.normal(size=n)
    return X, y


@pytest.mark.parametrize(
    "value_function, used",
    [
        ("baseline", "baseline"),
        ("anova", "anova"),
        ("model", "model"),
        ("model+anova", "model+anova"),
        ("auto", "lasso"),
    ],
)
def test_swapping_a_column_with_its_knockoff_negates_its_statistic(value_function, used):
    X, y = relevant_data(0, n=120, d=6, n_relevant=3)
    selector = HSICShapleySelector(value_function=value_function).fit(X, y)
    game = selector.value_function_
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    knockoffs = gaussian_knockoffs(X, random_state=0)[0]
    target = selector._target(y, y)
    attribute = check_memory(None).cache(_pairgame.attribute)
    statistic = knockoff_statistic(selector, game, attribute)
    W = statistic.fit(Z, knockoffs, target)
    assert statistic.name_ == used
    swapped_original, swapped_knockoffs = Z.copy(), knockoffs.copy()
    swapped_original[:, [1, 4]], swapped_knockoffs[:, [1, 4]] = knockoffs[:, [1, 4]], Z[:, [1, 4]]
    W_swapped = statistic.fit(swapped_original, swapped_knockoffs, target)
    assert statistic.name_ == used
    sign = np.ones(6)
    sign[[1, 4]] = -1
    # The model game's ridge multiplies the factors in column order: equal to rounding. The
    # lasso sees the columns in a canonical order: exact.
    atol = (1e-13 if used.startswith("model") else 1e-15) * np.abs(W).max()
    np.testing.assert_allclose(W_swapped, sign * W, rtol=1e-12, atol=atol)
    if used == "lasso":
        np.testing.assert_array_equal(W_swapped, sign * W)


def test_lasso_statistic_against_the_lasso_on_the_columns():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(200, 5))
    Y = np.column_stack([X[:, 0] - 2 * X[:, 3], X[:, 1]]) + rng.normal(size=(200, 2))
    Y -= Y.mean(axis=0)
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    knockoffs = gaussian_knockoffs(X, random_state=1)[0]
    columns = np.hstack([Z, knockoffs])
    for targets, model in [(Y[:, :1], LassoCV(cv=5)), (Y, MultiTaskLassoCV(cv=5))]:
        W, r2 = lasso_statistic(Z, knockoffs, targets)
        fitted = model.fit(columns, targets[:, 0] if targets.shape[1] == 1 else targets)
        magnitudes = np.linalg.norm(np.atleast_2d(fitted.coef_), axis=0)
        # The same lasso up to its coordinate descent's order and tolerance.
        np.testing.assert_allclose(W, magnitudes[:5] - magnitudes[5:], atol=1e-3)
        explained = 1 - fitted.mse_path_.mean(axis=-1).min() / targets.var(axis=0).mean()
        assert r2 == pytest.approx(explained, abs=1e-4)
    assert W[0] > 0.5 and W[3] > 1.0 and W[1] > 0.5


@pytest.mark.filterwarnings("ignore:No feature selected")
def test_auto_statistic_is_the_lasso_for_linear_responses_only():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(300, 10))
    linear = X[:, :3] @ [1.0, -1.0, 0.8] + rng.normal(size=300)
    curved = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 + np.abs(X[:, 2]) + 0.5 * rng.normal(size=300)
    for y, used in [(linear, "lasso"), (curved, "model")]:
        selector = HSICShapleySelector(fdr=0.2, n_knockoffs=2, random_state=0).fit(X, y)
        np.testing.assert_array_equal(selector.knockoff_value_functions_, [used, used])
    explicit = HSICShapleySelector(fdr=0.2, value_function="model", random_state=0).fit(X, linear)
    np.testing.assert_array_equal(explicit.knockoff_value_functions_, ["model"])


def test_fdr_selects_the_relevant_features():
    X, y = relevant_data(1)
    selector = HSICShapleySelector(fdr=0.2, random_state=0).fit(X, y)
    chosen = set(np.flatnonzero(selector.get_support()))
    assert len(chosen & set(range(10))) >= 8
    assert len(chosen - set(range(10))) <= 2
    assert selector.knockoff_statistics_.shape == (1, 20)
    assert selector.e_values_.shape == (20,) and selector.knockoff_thresholds_.shape == (1,)
    np.testing.assert_array_equal(selector.knockoff_groups_, np.arange(20))
    np.testing.assert_array_equal(selector.knockoff_value_functions_, ["lasso"])
    assert selector.transform(X).shape[1] == len(chosen)


def test_a_near_copy_is_selected_as_a_group():
    rng = np.random.default_rng(2)
    X, y = relevant_data(2)
    X[:, 1] = 0.99 * X[:, 0] + np.sqrt(1 - 0.99**2) * rng.normal(size=len(X))
    selector = HSICShapleySelector(fdr=0.2, random_state=0).fit(X, y)
    assert selector.knockoff_groups_[0] == selector.knockoff_groups_[1]
    assert selector.knockoff_statistics_.shape[1] == 19
    support = selector.get_support()
    assert support[0] == support[1]


def test_user_groups_and_constant_columns():
    X, y = relevant_data(3)
    X[:, 19] = 1.0
    groups = np.arange(20) // 2
    selector = HSICShapleySelector(fdr=0.2, knockoff_groups=groups, random_state=0).fit(X, y)
    assert selector.knockoff_statistics_.shape == (1, 10)
    assert selector.knockoff_groups_[19] == -1 and not selector.get_support()[19]
    with pytest.raises(ValueError, match="one label per feature"):
        HSICShapleySelector(fdr=0.2, knockoff_groups=[0, 1]).fit(X, y)


def test_fdr_on_the_attributor():
    rng = np.random.default_rng(4)
    X_p, X_q = rng.normal(size=(200, 12)), rng.normal(size=(200, 12))
    X_q[:, :6] += 0.8
    X, y = np.vstack([X_p, X_q]), np.repeat([0, 1], 200)
    attributor = MMDShapleyAttributor(fdr=0.2, random_state=0).fit(X, y)
    chosen = set(np.flatnonzero(attributor.get_support()))
    assert len(chosen & set(range(6))) >= 5 and len(chosen - set(range(6))) <= 1


def test_fdr_errors_and_warnings():
    X, y = relevant_data(5, d=4, n_relevant=1)
    with pytest.raises(ValueError, match="one of threshold, alpha and fdr"):
        HSICShapleySelector(fdr=0.1, alpha=0.05).fit(X, y)
    with pytest.warns(UserWarning, match="larger fdr"):
        HSICShapleySelector(fdr=0.1, random_state=0).fit(X, y)
    fitted = HSICShapleySelector().fit(X, y).set_params(fdr=0.2)
    with pytest.raises(ValueError, match="fit again with fdr set"):
        fitted.get_support()
    frame = __import__("pandas").DataFrame({"a": X[:, 0], "b": list("xy" * (len(X) // 2))})
    with pytest.raises(ValueError, match="need numeric features; b are categorical"):
        HSICShapleySelector(fdr=0.2).fit(frame, y)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"n_knockoffs": True}, "n_knockoffs must be a whole number"),
        ({"n_knockoffs": False}, "n_knockoffs"),
        ({"knockoff_groups": [None, 0, 1, 2]}, "got None"),
        ({"knockoff_groups": [0.5, 0, 1, 2]}, "got 0.5"),
        ({"knockoff_groups": [[0, 1], [1, 2, 3]]}, "got nested lists"),
        ({"knockoff_groups": [[0, 1], [2, 3]]}, r"got shape \(2, 2\)"),
        ({"knockoff_groups": [0, 1, 2]}, r"got shape \(3,\)"),
    ],
)
def test_bad_knockoff_parameters_are_named(options, message):
    X = np.random.default_rng(0).normal(size=(60, 4))
    with pytest.raises(ValueError, match=message):
        HSICShapleySelector(fdr=0.2, **options).fit(X, X[:, 0])


def test_string_group_labels_are_groups():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(80, 4))
    labels = ["a", "a", "b", "c"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fitted = HSICShapleySelector(fdr=0.5, knockoff_groups=labels, random_state=0).fit(
            X, X[:, 0] + X[:, 1]
        )
    assert fitted.knockoff_groups_[0] == fitted.knockoff_groups_[1]
    assert len(set(fitted.knockoff_groups_)) == 3
