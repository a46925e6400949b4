"""The model game (value_function="model"): a kernel ridge fit explained row by row."""

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import make_friedman1
from sklearn.kernel_ridge import KernelRidge

from pkex_select import (
    HSICShapleySelector,
    MMDShapleyAttributor,
    ProductKernelExplainer,
    _integrals,
    _pair_evidence,
    _ridge_game,
    _selection,
)
from pkex_select._integrals import feature_products
from pkex_select._plan import subsample_rows
from pkex_select._ridge_game import (
    _PENALTIES,
    ADDITIVE_WEIGHT,
    _factor_tensor,
    _joint_kernel,
    _leave_one_out,
    _ridge_weights,
    _weights_at,
    additive_features,
    additive_terms,
    check_penalty,
    drop_one_gains,
    dropped_categories,
    explained_points,
    model_factors,
    model_rows,
    model_values,
    ridge_targets,
    set_aside_fits,
)
from pkex_select._selection import _EVIDENCE_WORK, ANOVA_SHARE, ShapleySelectorBase
from pkex_select._statistics import HSIC
from pkex_select.kernels import bandwidths, gamma_from_bandwidth
from tests.references import general_coalition_values, shapley_from_coalition_values


def test_targets_are_centred_indicators_for_labels_and_columns_for_values():
    codes = np.array([0, 1, 1, 0, 1.0])
    assert ridge_targets(codes[:, None], ["delta"]).shape == (5, 1)
    three = ridge_targets(np.array([0, 1, 2, 2.0])[:, None], ["delta"])
    assert three.shape == (4, 3)
    np.testing.assert_allclose(three.sum(axis=0), 0.0, atol=1e-15)
    values = np.array([[1.0, 4.0], [2.0, 5.0], [6.0, 0.0]])
    np.testing.assert_allclose(ridge_targets(values, ["rbf", "rbf"]), values - values.mean(0))


def _loo_error(K, targets, penalty):
    """Leave-one-out squared error by refitting without each row."""
    errors = []
    for i in range(K.shape[0]):
        keep = np.arange(K.shape[0]) != i
        model = KernelRidge(alpha=penalty, kernel="precomputed").fit(
            K[np.ix_(keep, keep)], targets[keep]
        )
        errors.append((model.predict(K[i : i + 1, keep]) - targets[i]) ** 2)
    return np.mean(errors)


def test_ridge_weights_are_kernel_ridge_at_the_leave_one_out_penalty():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    targets = (np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=30))[:, None]
    targets -= targets.mean()
    K = np.prod(_factor_tensor(X, ["rbf"] * 3, np.full(3, 0.5)), axis=2)
    errors = [_loo_error(K, targets, penalty) for penalty in _PENALTIES]
    best = _PENALTIES[int(np.argmin(errors))]
    expected = KernelRidge(alpha=best, kernel="precomputed").fit(K, targets).dual_coef_
    np.testing.assert_allclose(_ridge_weights(K, targets)[0], expected, rtol=1e-9, atol=1e-12)


def test_weights_at_a_penalty_are_kernel_ridge_at_it():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(40, 3))
    targets = ridge_targets(np.c_[np.sin(2 * X[:, 0]), X[:, 1] * X[:, 2]], ["rbf"] * 2)
    K = _joint_kernel(X, ["rbf"] * 3, np.full(3, 0.5))
    for penalty in (1e-4, 0.1, 10.0):
        expected = KernelRidge(alpha=penalty, kernel="precomputed").fit(K, targets).dual_coef_
        np.testing.assert_allclose(_weights_at(K, targets, penalty), expected, rtol=1e-9)
    # Where rounding leaves K + penalty I short of positive definite, a symmetric solve.
    indefinite = np.diag([1.0, -1.0, 2.0])
    np.testing.assert_allclose(
        _weights_at(indefinite, targets[:3], 0.5),
        np.linalg.solve(indefinite + 0.5 * np.eye(3), targets[:3]),
        rtol=1e-12,
    )


def test_the_check_penalty_is_the_least_leave_one_out_error_with_the_terms():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(30, 3))
    targets = ridge_targets((np.abs(X[:, 0]) + np.sin(2 * X[:, 1]))[:, None], ["rbf"])
    kernels, gammas = ["rbf", "laplacian", "rbf"], np.array([0.4, 0.3, 0.5])
    additive_gammas = np.array([0.5, 0.0, 0.0])
    K = np.prod(_factor_tensor(X, kernels, gammas), axis=2)
    K += additive_terms(X, kernels, additive_gammas)[1].sum(axis=2)
    errors = [_loo_error(K, targets, penalty) for penalty in _PENALTIES]
    best = _PENALTIES[int(np.argmin(errors))]
    assert check_penalty(X, kernels, gammas, targets, None, additive_gammas) == best


def _enumerated_mean_abs_shapley(factors, weights, removed):
    """Mean over rows of |phi_j|, each row's game enumerated over all 2^d coalitions."""
    d = factors.shape[2]
    phi = [
        shapley_from_coalition_values(general_coalition_values(row, removed, output), d)
        for row in factors
        for output in weights.T
    ]
    return np.abs(np.reshape(phi, (factors.shape[0], weights.shape[1], d))).sum(axis=1).mean(axis=0)


@pytest.mark.parametrize(
    "kernels, mismatch",
    [
        (["rbf"] * 4, None),
        (["rbf", "laplacian", "delta", "cauchy"], None),
        (["rbf", "laplacian", "delta", "cauchy"], [0.0, 0.0, 0.3, 0.0]),
    ],
)
def test_values_are_the_enumerated_mean_absolute_shapley_values(kernels, mismatch):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(25, 4))
    X[:, 2] = rng.integers(0, 3, 25)
    codes = (X[:, 0] + X[:, 2] > 1).astype(float)
    targets = ridge_targets(codes[:, None], ["delta"])
    gammas = np.array([0.7, 0.3, 1.0, 0.5])
    factors = _factor_tensor(X, kernels, gammas, mismatch)
    weights = _ridge_weights(np.prod(factors, axis=2), targets)[0]
    expected = _enumerated_mean_abs_shapley(factors, weights, factors.mean(axis=0))
    np.testing.assert_allclose(
        model_values(X, kernels, gammas, targets, mismatch), expected, rtol=1e-12
    )
    # At a penalty given (chosen on other rows), the ridge fitted at it is explained.
    weights = KernelRidge(alpha=0.3, kernel="precomputed").fit(np.prod(factors, axis=2), targets)
    expected = _enumerated_mean_abs_shapley(factors, weights.dual_coef_, factors.mean(axis=0))
    np.testing.assert_allclose(
        model_values(X, kernels, gammas, targets, mismatch, penalty=0.3), expected, rtol=1e-9
    )


def test_additive_terms_give_the_enumerated_mean_absolute_shapley_values(monkeypatch):
    """With terms of their own for x1 and x3 the ridge fits K = prod + sum of terms; each
    row's game adds, for a term in the coalition, its own part of the fit and, for one
    outside it, that part at the term's mean over the rows."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(20, 4))
    X[:, 2] = rng.integers(0, 3, 20)
    kernels = ["rbf", "laplacian", "delta", "cauchy"]
    targets = ridge_targets(np.c_[X[:, 0] + np.abs(X[:, 1]), np.cos(2 * X[:, 3])], kernels[:1] * 2)
    gammas = np.array([0.7, 0.01, 1.0, 0.5])
    additive_gammas = np.array([0.0, 0.8, 0.0, 0.4])
    columns, terms = additive_terms(X, kernels, additive_gammas)
    assert columns.tolist() == [1, 3]
    factors = _factor_tensor(X, kernels, gammas)
    weights = _ridge_weights(np.prod(factors, axis=2) + terms.sum(axis=2), targets)[0]
    removed = factors.mean(axis=0)
    masks = np.arange(16)
    phi = []
    for row in range(20):
        for output in weights.T:
            values = general_coalition_values(factors[row], removed, output)
            for j, term in zip(columns, np.moveaxis(terms, 2, 0)):
                own, at_mean = term[row] @ output, term.mean(axis=0) @ output
                values = values + np.where((masks >> j) & 1, own, at_mean)
            phi.append(shapley_from_coalition_values(values, 4))
    phi = np.abs(np.reshape(phi, (20, 2, 4))).sum(axis=1)
    np.testing.assert_allclose(
        model_values(X, kernels, gammas, targets, additive_gammas=additive_gammas),
        phi.mean(axis=0),
        rtol=1e-12,
    )
    # Beyond _EXPLAINED_POINTS rows the values average that many evenly spaced ones, each
    # removed factor still its mean over every row.
    monkeypatch.setattr(_ridge_game, "_EXPLAINED_POINTS", 7)
    points = [0, 3, 6, 10, 13, 16, 19]
    assert explained_points(20).tolist() == points and explained_points(7) is None
    np.testing.assert_allclose(
        model_values(X, kernels, gammas, targets, additive_gammas=additive_gammas),
        phi[points].mean(axis=0),
        rtol=1e-12,
    )


def _additive_design(seed=2):
    """x0 and x1 linear, |x2| and cos(2 x3), four noise columns; all but x0 and x1 set aside."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(300, 8))
    y = X[:, 0] + X[:, 1] + np.abs(X[:, 2]) + np.cos(2 * X[:, 3]) + 0.5 * rng.normal(size=300)
    targets = ridge_targets(((y - y.mean()) / y.std())[:, None], ["rbf"])
    aligned = np.r_[0.05, 0.05, np.full(6, 0.5 * np.exp(-6.0))]
    return X, ["rbf"] * 8, aligned, np.full(8, 0.5), targets


def _at_median(median, columns):
    """additive_features' answer where ``columns`` enter at their median-heuristic
    parameters (``median``) and no other feature enters."""
    return np.where(np.isin(np.arange(median.size), columns), median, 0.0)


def _gains_as_term_and_in_product(X, kernels, aligned, median, targets, j):
    """Feature j's leave-one-out gains: as a term added to the aligned kernel, and with its
    factor multiplied into it."""
    K = _joint_kernel(X, kernels, aligned)
    factor = _factor_tensor(X[:, [j]], [kernels[j]], median[[j]])[..., 0]
    error = _leave_one_out(K, targets)[0]
    return [
        1 - _leave_one_out(trial, targets)[0] / error
        for trial in (K + ADDITIVE_WEIGHT * factor, K * factor)
    ]


def test_even_effects_enter_as_terms_where_the_product_would_not_take_them_and_noise_does_not():
    """|x2| and cos(2 x3) multiplied into the kernel of x0 and x1 make it more local in both:
    in the product |x2| gains nothing; as a term of its own 5%, cos(2 x3) more, and the noise
    loses."""
    X, kernels, aligned, median, targets = _additive_design()
    as_term, in_product = _gains_as_term_and_in_product(X, kernels, aligned, median, targets, 2)
    assert in_product < 0.0 < 0.02 < as_term
    evidence = np.ones(8)  # the ANOVA game's: the five first candidates are tried, at 2%
    terms = additive_features(X, kernels, aligned, median, targets, evidence=evidence)
    np.testing.assert_array_equal(terms, _at_median(median, [2, 3]))
    # Without it every candidate is tried, at 10%: |x2| (5%) stays out.
    unvetted = additive_features(X, kernels, aligned, median, targets)
    np.testing.assert_array_equal(unvetted, _at_median(median, [3]))
    assert not additive_features(X, kernels, median, median, targets).any()  # none set aside


@pytest.mark.parametrize("n_jobs", [None, 2])
def test_the_trials_penalty_is_the_check_penalty_of_the_kernel_they_end_with(n_jobs, monkeypatch):
    """additive_features(return_penalty=True) gives check_penalty's penalty of the kernel
    with the terms taken, to the bit, where at most one was taken; with two, None."""
    monkeypatch.setattr(_ridge_game, "_FINER_TRIES", 0)  # the trials at the median width
    X, kernels, aligned, median, targets = _additive_design()
    for evidence, taken in ((None, [3]), (np.ones(8), [2, 3])):
        terms, penalty, product_gammas = additive_features(
            X,
            kernels,
            aligned,
            median,
            targets,
            evidence=evidence,
            n_jobs=n_jobs,
            return_penalty=True,
        )
        np.testing.assert_array_equal(terms, _at_median(median, taken))
        assert product_gammas is not aligned and np.array_equal(product_gammas, aligned)
        expected = check_penalty(X, kernels, aligned, targets, None, terms)
        assert penalty == (expected if len(taken) == 1 else None)
    # None taken: the aligned kernel's own penalty.
    bare = additive_features(
        X, kernels, aligned, median, targets, evidence=np.eye(8)[7], return_penalty=True
    )
    assert not bare[0].any() and bare[1] == check_penalty(X, kernels, aligned, targets)


def test_a_categorical_factor_is_one_where_values_agree_and_its_mismatch_factor_elsewhere():
    codes = np.array([[0.0], [1.0], [0.0], [2.0]])
    factors = _factor_tensor(codes, ["delta"], np.ones(1), [0.25])[..., 0]
    np.testing.assert_array_equal(factors, np.where(codes == codes.T, 1.0, 0.25))
    np.testing.assert_array_equal(
        _factor_tensor(codes, ["delta"], np.ones(1))[..., 0], codes == codes.T
    )


def test_identifiers_and_unrelated_labels_get_zero_and_related_labels_are_kept():
    rng = np.random.default_rng(3)
    n = 300
    X = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    X["city"] = rng.choice(["Oslo", "Rome", "Lima", "Pisa"], n)
    X["unrelated"] = rng.choice(list("xyz"), n)
    X["id"] = [f"r{i}" for i in range(n)]
    X["code"] = rng.integers(0, 40, n).astype(str)
    y = X.a + (X.city == "Rome") + (X.code.astype(int) < 10) + 0.3 * rng.normal(size=n)
    with pytest.warns(UserWarning, match="identifier"):
        model = HSICShapleySelector(n_features_to_select=3, value_function="model").fit(X, y)
    values = dict(zip(X.columns, model.shapley_values_))
    assert values["id"] == 0.0 and values["unrelated"] == 0.0
    assert set(model.get_feature_names_out()) == {"a", "city", "code"}
    # "model+anova" adds the ANOVA game's shares: about 0 for both, not exactly.
    with pytest.warns(UserWarning, match="identifier"):
        selector = HSICShapleySelector(n_features_to_select=3, value_function="model+anova")
        selector.fit(X, y)
    values = dict(zip(X.columns, selector.shapley_values_))
    assert max(values["id"], values["unrelated"]) < 0.5 * min(
        values[c] for c in "a city code".split()
    )
    assert set(selector.get_feature_names_out()) == {"a", "city", "code"}


def test_a_categorical_column_is_dropped_only_where_the_ridge_loses_nothing():
    rng = np.random.default_rng(4)
    X = np.column_stack([rng.normal(size=120), np.arange(120.0), rng.integers(0, 3, 120)])
    targets = ridge_targets((X[:, 0] + 2 * (X[:, 2] == 1))[:, None], ["rbf"])
    kernels = ["rbf", "delta", "delta"]
    kept = dropped_categories(X, kernels, np.array([0.5, 1, 1]), targets, np.zeros(3))
    np.testing.assert_array_equal(kept, [0.0, 1.0, 0.0])


def test_values_match_the_explainer_of_the_same_kernel_ridge():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 3))
    targets = ridge_targets((X[:, 0] ** 2 + X[:, 1])[:, None], ["rbf"])
    gamma = np.full(3, 0.4)
    factors = _factor_tensor(X, ["rbf"] * 3, gamma)
    weights = _ridge_weights(np.prod(factors, axis=2), targets)[0]
    model = KernelRidge(alpha=1.0, kernel="rbf", gamma=0.4).fit(X, targets)
    model.dual_coef_ = weights  # the explainer reads the model's expansion
    explanation = ProductKernelExplainer(
        model, value_function="observational", background=X
    ).explain(X)
    expected = np.abs(explanation.values).mean(axis=0)
    np.testing.assert_allclose(model_values(X, ["rbf"] * 3, gamma, targets), expected, rtol=1e-12)
    # Work started beside, once the factor tensor is built: the values are the same.
    calls = []
    beside_work = model_values(
        X, ["rbf"] * 3, gamma, targets, after_factors=lambda: calls.append(1)
    )
    np.testing.assert_array_equal(beside_work, model_values(X, ["rbf"] * 3, gamma, targets))
    assert calls == [1]


def test_a_tensor_built_before_gives_the_same_values():
    rng = np.random.default_rng(3)
    X = np.column_stack([rng.normal(size=(60, 3)), rng.integers(0, 3, 60)])
    kernels = ["rbf", "laplacian", "rbf", "delta"]
    gammas = np.array([0.3, 0.5, 0.2, 1.0])
    mismatch = np.array([0.0, 0.0, 0.0, 0.4])
    targets = ridge_targets((np.abs(X[:, 0]) + X[:, 3])[:, None], ["rbf"])
    factors = model_factors(X, kernels, gammas, mismatch)
    np.testing.assert_array_equal(
        model_values(X, kernels, gammas, targets, mismatch, factors=factors),
        model_values(X, kernels, gammas, targets, mismatch),
    )


def test_model_factors_hold_the_explained_rows_and_the_full_tensors_kernel_and_means(
    monkeypatch,
):
    """Beyond the explained points the model keeps only their rows of the factor tensor;
    the product kernel and the mean factors come from the other rows built in blocks, with
    the bits of the whole tensor's."""
    rng = np.random.default_rng(4)
    X = np.column_stack([rng.normal(size=(40, 3)), rng.integers(0, 3, 40)])
    kernels = ["rbf", "laplacian", "rbf", "delta"]
    gammas = np.array([0.3, 0.5, 0.2, 1.0])
    mismatch = np.array([0.0, 0.0, 0.0, 0.4])
    monkeypatch.setattr(_ridge_game, "_EXPLAINED_POINTS", 7)
    monkeypatch.setattr(_ridge_game, "TASK_BYTES", 8 * 40 * 4 * 3)  # blocks of 3 rows
    factors = model_factors(X, kernels, gammas, mismatch)
    tensor = _factor_tensor(X, kernels, gammas, mismatch)
    np.testing.assert_array_equal(factors.points, explained_points(40))
    np.testing.assert_array_equal(factors.point_factors, tensor[factors.points])
    np.testing.assert_array_equal(factors.kernel, feature_products(tensor))
    np.testing.assert_allclose(factors.kernel, np.prod(tensor, axis=2), rtol=1e-15)
    np.testing.assert_array_equal(factors.means, tensor.mean(axis=0))


def test_a_fit_with_the_anova_game_beside_gives_the_values_of_one_without():
    # With two workers the model's factors are built while the ANOVA game runs, and the
    # statistic and the additive terms' trials are computed while it runs.
    X, y = make_friedman1(1500, 20, noise=1.0, random_state=0)
    one = HSICShapleySelector(n_features_to_select=5, random_state=0).fit(X, y)
    two = HSICShapleySelector(n_features_to_select=5, random_state=0, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(two.shapley_values_, one.shapley_values_)
    assert two.hsic_ == one.hsic_


def test_rows_are_bounded_by_the_tensor_memory():
    assert model_rows(500, 20).size == 500
    assert model_rows(5000, 20, random_state=0).size == 1000
    rows = model_rows(5000, 100, random_state=0)
    assert rows.size == 500 and np.all(np.diff(rows) > 0)


def test_default_ranks_by_the_model_and_anova_games_and_tests_by_the_anova_game(monkeypatch):
    # Every model share kept (the unbacked rule is tested below).
    monkeypatch.setattr(_selection, "_UNBACKED_SHARE", 1.0)
    X, y = make_friedman1(300, 10, noise=0.5, random_state=0)
    selector = HSICShapleySelector(n_features_to_select=5, random_state=0).fit(X, y)
    assert selector.value_function_ == "model+anova"
    assert set(selector.get_support(indices=True)) == set(range(5))
    assert np.all(selector.shapley_values_ >= 0)
    np.testing.assert_allclose(np.abs(selector.shares_).sum(), 1.0)
    # Its values from the two games fitted on their own: shares plus 0.3 times shares.
    model = HSICShapleySelector(value_function="model", random_state=0).fit(X, y)
    anova = HSICShapleySelector(value_function="anova", scales=[1], random_state=0).fit(X, y)
    expected = (
        model.shares_
        + ANOVA_SHARE
        * np.maximum(anova.shapley_values_, 0)
        / np.sum(np.maximum(anova.shapley_values_, 0))
    ) / (1 + ANOVA_SHARE)
    np.testing.assert_allclose(selector.shapley_values_, expected, rtol=1e-12)
    tested = HSICShapleySelector(alpha=0.05, random_state=0).fit(X, y)
    assert tested.value_function_ == "pairwise_anova"
    assert HSICShapleySelector(interactions="SII").fit(X, y).value_function_ == "baseline"


def _anova_shares(X, y):
    anova = HSICShapleySelector(value_function="anova", scales=[1], random_state=0).fit(X, y)
    return anova.shapley_values_, np.maximum(anova.shapley_values_, 0) / np.sum(
        np.maximum(anova.shapley_values_, 0)
    )


def _default_with_cut(model_shares, anova_shares, cut):
    """The default's values from its two games' shares with the model shares of ``cut``
    reduced to _UNBACKED_SHARE of themselves, scaled to add up to 1."""
    kept = np.where(cut, _selection._UNBACKED_SHARE * model_shares, model_shares)
    total = 1 + ANOVA_SHARE - (model_shares - kept).sum()
    return (kept + ANOVA_SHARE * anova_shares) / total


def test_an_unbacked_feature_keeps_a_tenth_of_its_model_share_and_nothing_else_changes():
    """The default values are the model shares, some cut to _UNBACKED_SHARE of themselves,
    plus 0.3 times the ANOVA shares, over 1.3 less what was cut (the set found by trying
    every set of features); only features whose ANOVA value is below _UNBACKED_LEVELS noise
    levels are cut, and none is left at 0."""
    X, y = make_friedman1(300, 10, noise=0.5, random_state=0)
    values = HSICShapleySelector(n_features_to_select=5, random_state=0).fit(X, y).shapley_values_
    model = HSICShapleySelector(value_function="model", random_state=0).fit(X, y).shares_
    anova, anova_shares = _anova_shares(X, y)
    matches = []
    for subset in range(2**10):
        dropped = (subset >> np.arange(10)) & 1 == 1
        expected = _default_with_cut(model, anova_shares, dropped)
        if np.allclose(values, expected, rtol=1e-12, atol=1e-15):
            matches.append(dropped & (model > 0))
    assert matches
    dropped = matches[0]
    assert dropped.any()  # the rule acts on this data set (a noise column the ridge uses)
    level = -anova[anova < 0].min()
    assert np.all(anova[dropped] < _selection._UNBACKED_LEVELS * level)
    assert np.all(values[model > 0] > 0)
    np.testing.assert_allclose(values.sum(), 1.0, rtol=1e-12)


def test_every_unbacked_feature_is_cut_but_those_the_check_finds_needed(monkeypatch):
    """With no feature checked, the cut set is every feature with a positive model value
    and an ANOVA value below _UNBACKED_LEVELS noise levels: all are cut alike, so their
    order among themselves stays the model's."""
    monkeypatch.setattr(_selection, "_UNBACKED_TRIES", 0)
    X, y = make_friedman1(300, 10, noise=0.5, random_state=0)
    values = HSICShapleySelector(random_state=0).fit(X, y).shapley_values_
    model = HSICShapleySelector(value_function="model", random_state=0).fit(X, y).shares_
    anova, anova_shares = _anova_shares(X, y)
    cut = (model > 0) & (anova < _selection._UNBACKED_LEVELS * -anova[anova < 0].min())
    assert 0 < cut.sum() < 10
    expected = _default_with_cut(model, anova_shares, cut)
    np.testing.assert_allclose(values, expected, rtol=1e-12, atol=1e-15)


def _squares(n_samples, seed):
    """The planted squares design: y = x_a^2 + x_b^2 + x_c x_d + noise, d = 50."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_samples, 50))
    relevant = rng.choice(50, 4, replace=False)
    a, b, c, d = relevant
    y = X[:, a] ** 2 + X[:, b] ** 2 + X[:, c] * X[:, d] + 1.3 * rng.standard_normal(n_samples)
    return X, y, relevant


def test_a_pure_interaction_beside_two_squares_is_backed_by_its_pair_dividend(monkeypatch):
    """The ANOVA game barely backs the interacting pair and 200 rows do not show the ridge
    needs it; its pair dividend stands far out, so neither is cut and both rank among the
    first 4. Without the pair check (the rule of 12-07) they ranked 3rd and 7th; before
    12-07, when only the features checked were cut, 5th and 15th."""
    X, y, relevant = _squares(1000, 4)
    ranks = np.argsort(np.argsort(-HSICShapleySelector(random_state=0).fit(X, y).shapley_values_))
    assert sorted(ranks[relevant[2:]] + 1) == [3, 4]
    monkeypatch.setattr(_selection, "_PAIR_SCORE", np.inf)
    values = HSICShapleySelector(random_state=0).fit(X, y).shapley_values_
    ranks = np.argsort(np.argsort(-values))
    assert sorted(ranks[relevant[2:]] + 1) == [3, 7]


def test_a_candidate_is_uncut_exactly_where_a_pair_score_reaches_the_bar(monkeypatch):
    """With the drop-one check never backing a feature, the cut set is every feature below
    the ANOVA bar with a positive model value but the candidates whose standardised pair
    dividend with another candidate or a partner reaches _PAIR_SCORE; values to 1e-12. (The
    default's model game tries set-aside features as terms by the ANOVA game's evidence, the
    model game alone by their own, so the values are read from the fit: here they differ.)"""
    monkeypatch.setattr(_selection, "_NEEDED_GAIN", np.inf)
    found = {}
    unbacked_of, pair_scores = ShapleySelectorBase._unbacked, _selection.pair_scores

    def recorded_unbacked(self, model_values, anova_values, *args):
        found["model"], found["anova"] = model_values, anova_values
        return unbacked_of(self, model_values, anova_values, *args)

    def recorded_scores(*args):
        dividends, spreads = _pair_evidence.pair_dividends(*args)
        found["scores"] = dividends / spreads
        return pair_scores(*args)

    monkeypatch.setattr(ShapleySelectorBase, "_unbacked", recorded_unbacked)
    monkeypatch.setattr(_selection, "pair_scores", recorded_scores)
    X, y, relevant = _squares(400, 1)
    values = HSICShapleySelector(random_state=0).fit(X, y).shapley_values_
    model, anova, scores = found["model"], found["anova"], found["scores"]
    unbacked = (model > 0) & (anova < _selection._UNBACKED_LEVELS * -anova[anova < 0].min())
    candidates = np.flatnonzero(unbacked)
    candidates = np.sort(candidates[np.argsort(-model[candidates], kind="stable")][:12])
    assert scores.shape[0] == candidates.size
    np.fill_diagonal(scores, -np.inf)  # a feature with itself
    paired = candidates[scores.max(axis=1) >= _selection._PAIR_SCORE]
    np.testing.assert_array_equal(paired, np.sort(relevant[2:]))  # the pair, and no other
    cut = unbacked.copy()
    cut[paired] = False
    model_shares = model.clip(0) / model.clip(0).sum()
    anova_shares = anova.clip(0) / anova.clip(0).sum()
    expected = _default_with_cut(model_shares, anova_shares, cut)
    np.testing.assert_allclose(values, expected, rtol=1e-12)


def test_drop_one_gains_are_the_leave_one_out_errors_without_each_feature():
    """Against the product of the other factors (with a categorical column's mismatch
    factor and an additive term) and leave-one-out errors from refits at every penalty."""
    rng = np.random.default_rng(4)
    X = np.column_stack([rng.normal(size=(24, 3)), rng.integers(0, 3, 24)])
    targets = (X[:, 0] ** 2 + np.sin(X[:, 1]) + 0.3 * X[:, 3] + 0.2 * rng.normal(size=24))[:, None]
    targets -= targets.mean()
    kernels, gammas = ["rbf", "rbf", "laplacian", "delta"], np.array([0.4, 0.01, 0.3, 0.0])
    mismatch, additive_gammas = np.array([0, 0, 0, 0.4]), np.array([0, 0.5, 0, 0])
    factors = _factor_tensor(X, kernels, gammas, mismatch)
    term = ADDITIVE_WEIGHT * _factor_tensor(X[:, [1]], ["rbf"], [0.5])[..., 0]

    def error(without):
        kept = [j for j in range(4) if j != without]
        K = np.prod(factors[..., kept], axis=2) + (term if without != 1 else 0.0)
        return min(_loo_error(K, targets, penalty) for penalty in _PENALTIES)

    gains = drop_one_gains(X, kernels, gammas, targets, [0, 1, 3], mismatch, additive_gammas)
    expected = [error(j) / error(None) - 1 for j in (0, 1, 3)]
    np.testing.assert_allclose(gains, expected, rtol=1e-9)
    assert gains[0] > 0.5  # y's largest part goes with feature 0
    # A target the ridge predicts without error with or without a feature: no gain (not 0/0).
    flat = drop_one_gains(X, kernels, gammas, np.zeros_like(targets), [0, 1], mismatch)
    np.testing.assert_array_equal(flat, [0.0, 0.0])


def _blocks(repetition):
    """The planted blocks design at n = 200, d = 50, seeded as benchmarks.selection.planted
    seeds it: three near-copies of a signal with an even effect, a step and a pure
    interaction; X, y, the relevant columns (the copies first) and the noise columns."""
    rng = np.random.default_rng([2026, 0, repetition, 6])
    X = rng.standard_normal((200, 50))
    relevant = rng.choice(50, 6, replace=False)
    signal = rng.standard_normal(200)
    X[:, relevant[:3]] = signal[:, None] + 0.33 * rng.standard_normal((200, 3))
    c, d, e = relevant[3:]
    y = np.abs(signal) + (X[:, e] > 0) + X[:, c] * X[:, d] + 0.5 * rng.standard_normal(200)
    return X, y, relevant, np.setdiff1d(np.arange(X.shape[1]), relevant)


def test_the_default_ranks_copies_above_a_noise_column_the_ridge_spends_its_fit_on(monkeypatch):
    """The planted blocks design at n = 200 (data set 3): three near-copies of a signal
    with an even effect. The ridge spends part of its fit on a noise column, whose model
    share puts it above a copy; its ANOVA value is at the noise level and the ridge predicts
    as well without it, so the default cuts its model share."""
    X, y, relevant, noise = _blocks(3)
    values = HSICShapleySelector(random_state=3).fit(X, y).shapley_values_
    assert values[relevant[:3]].min() > values[noise].max()
    monkeypatch.setattr(_selection, "_UNBACKED_SHARE", 1.0)  # every model share kept
    kept = HSICShapleySelector(random_state=3).fit(X, y).shapley_values_
    assert kept[relevant[:3]].min() < kept[noise].max()


def test_the_default_ranks_redundant_copies_above_noise():
    """The model game alone leaves a copy of a feature it uses at about 0, below noise
    columns (the planted redundant design of benchmarks.selection.planted); the default
    ranks every relevant feature above every noise column."""
    rng = np.random.default_rng(0)
    n, d = 200, 30
    X = rng.standard_normal((n, d))
    signal = rng.standard_normal(n)
    X[:, :4] = signal[:, None] + 0.29 * rng.standard_normal((n, 4))
    y = signal + X[:, 4] + np.sin(2 * X[:, 5]) + 0.5 * rng.standard_normal(n)
    relevant, noise = np.arange(6), np.arange(6, d)
    model = HSICShapleySelector(value_function="model", random_state=0).fit(X, y)
    assert model.shapley_values_[relevant].min() < model.shapley_values_[noise].max()
    default = HSICShapleySelector(n_features_to_select=6, random_state=0).fit(X, y)
    values = default.shapley_values_
    assert values[relevant].min() > values[noise].max()
    np.testing.assert_array_equal(default.get_support(indices=True), relevant)
    # The features the model uses keep their order.
    used = np.flatnonzero(model.shares_ > 0.05)
    np.testing.assert_array_equal(
        np.argsort(-values[used], kind="stable"), np.argsort(-model.shares_[used], kind="stable")
    )


def test_the_statistic_is_the_joint_kernel_hsic():
    X, y = make_friedman1(120, 5, random_state=1)
    model = HSICShapleySelector(value_function="model", bandwidth="median", scales=[1]).fit(X, y)
    paper = HSICShapleySelector(value_function="baseline", scales=[1]).fit(X, y)
    assert model.hsic_ == pytest.approx(paper.hsic_, rel=1e-12)
    assert model.hsic_ == pytest.approx(paper.shapley_values_.sum(), rel=1e-12)


def test_a_constant_feature_is_a_dummy_and_a_noise_feature_is_near_zero():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 4))
    X[:, 3] = 2.0
    y = np.sin(2 * X[:, 0]) + X[:, 1]
    values = HSICShapleySelector(n_features_to_select=2).fit(X, y).shapley_values_
    assert values[3] == 0.0
    assert values[2] < 0.05 * min(values[0], values[1])


def test_attributor_ranks_by_the_model_game_on_request():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(200, 6))
    labels = np.repeat([0, 1], 100)
    X[labels == 1, 2] += 1.0
    attributor = MMDShapleyAttributor(n_features_to_select=1, value_function="model").fit(X, labels)
    assert attributor.value_function_ == "model"
    assert attributor.get_support(indices=True).tolist() == [2]


@pytest.mark.parametrize("option", [{"alpha": 0.05}, {"n_permutations": 99}])
def test_the_model_game_refuses_tests(option):
    X, y = make_friedman1(60, 5, random_state=0)
    with pytest.raises(ValueError, match="value_function='model'"):
        HSICShapleySelector(value_function="model", **option).fit(X, y)


def test_a_set_aside_feature_the_ridge_needs_enters_as_a_term_and_noise_does_not():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 8))
    y = X[:, 0] + np.sin(3 * X[:, 1]) + 0.3 * rng.normal(size=400)
    targets = ridge_targets(((y - y.mean()) / y.std())[:, None], ["rbf"])
    median = np.full(8, 0.5)
    aligned = np.r_[0.3, np.full(7, 0.5 * np.exp(-6.0))]  # all but x0 set aside
    terms = additive_features(X, ["rbf"] * 8, aligned, median, targets)
    np.testing.assert_array_equal(terms, _at_median(median, [1]))
    nothing_set_aside = additive_features(X, ["rbf"] * 8, median, median, targets)
    assert not nothing_set_aside.any()


def _high_frequency(n_samples, seed, n_features=8):
    """sin 6x over four periods beside a linear effect, x uniform on [-2, 2]: finer than the
    median heuristic's width. X standardised; the targets as the ridge fits them."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.0, 2.0, (n_samples, n_features))
    y = np.sin(6 * X[:, 0]) + X[:, 1] + 0.3 * rng.standard_normal(n_samples)
    return X, y


def test_an_effect_finer_than_the_median_width_enters_as_a_finer_term(monkeypatch):
    """The ANOVA game does not back sin 6x at the median heuristic's width, so it is not
    tried there; the ridge's residuals show it, and it enters at a quarter of that width,
    the noise columns not at all. Without the ANOVA game (the model game alone), or with
    the finer trials off, it does not enter."""
    X, y = _high_frequency(300, 0)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    targets = ridge_targets(((y - y.mean()) / y.std())[:, None], ["rbf"])
    median = gamma_from_bandwidth("rbf", bandwidths(X))
    aligned = np.r_[median[0] * np.exp(-6.0), median[1], median[2:] * np.exp(-6.0)]
    no_evidence = np.zeros(8)
    terms = additive_features(X, ["rbf"] * 8, aligned, median, targets, evidence=no_evidence)
    assert terms[0] == pytest.approx(64.0 * median[0], rel=1e-12)  # the bandwidth over 8
    assert not np.any(terms[1:])
    assert not additive_features(X, ["rbf"] * 8, aligned, median, targets)[0] > median[0]
    monkeypatch.setattr(_ridge_game, "_FINER_TRIES", 0)
    off = additive_features(X, ["rbf"] * 8, aligned, median, targets, evidence=no_evidence)
    assert not off.any()


def test_a_term_at_the_median_width_is_replaced_by_a_finer_one(monkeypatch):
    """sin 6x with ANOVA evidence: tried at the median width, its term takes a little of
    the effect (more than 2%) and enters; the residuals still show it finer, and its term
    at an eighth of the width takes the place of the first (the noise columns get none).
    With the finer trials off it stays at the median width."""
    X, y = _high_frequency(300, 0)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    targets = ridge_targets(((y - y.mean()) / y.std())[:, None], ["rbf"])
    median = gamma_from_bandwidth("rbf", bandwidths(X))
    aligned = np.r_[median[0] * np.exp(-6.0), median[1], median[2:] * np.exp(-6.0)]
    evidence = np.eye(8)[0]
    terms, penalty, _ = additive_features(
        X, ["rbf"] * 8, aligned, median, targets, evidence=evidence, return_penalty=True
    )
    assert terms[0] == pytest.approx(64.0 * median[0], rel=1e-12) and not np.any(terms[1:])
    assert penalty is None  # the replaced term is summed in another order than check_penalty's
    monkeypatch.setattr(_ridge_game, "_FINER_TRIES", 0)
    at_median = additive_features(X, ["rbf"] * 8, aligned, median, targets, evidence=evidence)
    np.testing.assert_array_equal(at_median, _at_median(median, [0]))


def test_an_effect_too_fine_for_the_width_the_alignment_kept_enters_as_a_finer_term():
    """sin 8x alone: the alignment keeps x0 at a width too wide for it (not set aside, so
    no trial at the median width), and the residuals still bring in its finer term."""
    rng = np.random.default_rng(3)
    X = rng.uniform(-2.0, 2.0, (300, 6))
    y = np.sin(8 * X[:, 0]) + 0.3 * rng.standard_normal(300)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    targets = ridge_targets(((y - y.mean()) / y.std())[:, None], ["rbf"])
    median = gamma_from_bandwidth("rbf", bandwidths(X))
    aligned = np.r_[median[0] / 4.0, median[1:] * np.exp(-6.0)]  # x0 twice as wide
    terms = additive_features(X, ["rbf"] * 6, aligned, median, targets, evidence=np.zeros(6))
    assert terms[0] > 4.0 * median[0] and not np.any(terms[1:])


def test_a_high_frequency_effect_ranks_second_not_among_the_noise(monkeypatch):
    """On python -m benchmarks.selection.varied's high_frequency design at n = 300 (d = 30)
    the default ranks sin 6x second; without the finer trials, below noise columns."""
    X, y = _high_frequency(300, 1, n_features=30)
    ranks = HSICShapleySelector(random_state=0).fit(X, y).ranking_
    assert ranks[:2].tolist() == [2, 1]
    monkeypatch.setattr(_ridge_game, "_FINER_TRIES", 0)
    assert HSICShapleySelector(random_state=0).fit(X, y).ranking_[0] > 2


def _set_aside_interaction(n_samples=400, seed=0, n_features=10, interaction=1.0):
    """y = x0 x1 + x2 (no main effect of x0 or x1; ``interaction`` times x0 x1), X
    standardised, the targets as the ridge fits them, the median heuristic's parameters
    and aligned ones with every feature but x2 set aside."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_samples, n_features))
    y = interaction * X[:, 0] * X[:, 1] + X[:, 2] + 0.3 * rng.standard_normal(n_samples)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    targets = ridge_targets(((y - y.mean()) / y.std())[:, None], ["rbf"])
    median = gamma_from_bandwidth("rbf", bandwidths(X))
    aligned = median * np.exp(-6.0)
    aligned[2] = median[2]
    return X, targets, median, aligned


def test_a_pure_interaction_set_aside_goes_back_into_the_product_kernel(monkeypatch):
    """x0 x1 set aside with every noise column: neither a term of one feature nor a finer
    width takes it, the residuals show the pair, and it goes back into the product at its
    median-heuristic parameters, the noise columns not. Without the ANOVA game (the model
    game alone), or with the step off, the product is the aligned one."""
    X, targets, median, aligned = _set_aside_interaction()
    kernels = ["rbf"] * 10
    terms, _, product = additive_features(
        X, kernels, aligned, median, targets, evidence=np.zeros(10), return_penalty=True
    )
    np.testing.assert_array_equal(product, np.r_[median[:3], aligned[3:]])
    assert not terms.any()
    _, _, unvetted = additive_features(X, kernels, aligned, median, targets, return_penalty=True)
    np.testing.assert_array_equal(unvetted, aligned)
    monkeypatch.setattr(_ridge_game, "_PAIR_SCORE", np.inf)
    _, _, off = additive_features(
        X, kernels, aligned, median, targets, evidence=np.zeros(10), return_penalty=True
    )
    np.testing.assert_array_equal(off, aligned)


def test_a_restored_pair_enters_only_for_its_gain(monkeypatch):
    """The best pair's score opens its trial; the ridge's error decides: with the bar below
    every score, a noise pair is tried where there is no interaction to find (two more fits
    on the 400 rows: the trial and the kernel it is compared with) and stays out."""
    X, targets, median, aligned = _set_aside_interaction(interaction=0.0)
    leave_one_out = _ridge_game._leave_one_out
    fits = []
    monkeypatch.setattr(
        _ridge_game, "_leave_one_out", lambda K, t: fits.append(len(K)) or leave_one_out(K, t)
    )
    for bar in (np.inf, -np.inf):
        monkeypatch.setattr(_ridge_game, "_PAIR_SCORE", bar)
        _, _, product = additive_features(
            X, ["rbf"] * 10, aligned, median, targets, evidence=np.zeros(10), return_penalty=True
        )
        np.testing.assert_array_equal(product, aligned)
        fits.append(None)
    off, on = (fits.index(None), len(fits) - 1)
    assert fits[off + 1 : on].count(400) == fits[:off].count(400) + 2


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_the_default_ranks_a_pure_interaction_of_classes_among_the_relevant(monkeypatch, n_jobs):
    """On benchmarks.selection.varied's even_classes design (classes split at the median of
    |x0| + cos 2 x1 + x2 x3) at n = 1000, a data set where the alignment sets x2 and x3
    aside: the restored pair ranks them among the first four, without it 12th and 7th.
    With two workers (the ANOVA game beside, the model's factors built before the pair was
    restored) the values are those of one."""
    rng = np.random.default_rng([2026, 1834717204, 1000, 5])  # the benchmark's data set 5
    X = rng.standard_normal((1000, 40))
    z = np.abs(X[:, 0]) + np.cos(2 * X[:, 1]) + X[:, 2] * X[:, 3] + 0.5 * rng.standard_normal(1000)
    y = (z > np.median(z)).astype(int)
    fitted = HSICShapleySelector(4, random_state=5, n_jobs=n_jobs).fit(X, y)
    assert set(fitted.get_support(indices=True)) == {0, 1, 2, 3}
    if n_jobs == 2:
        one = HSICShapleySelector(4, random_state=5).fit(X, y)
        np.testing.assert_allclose(fitted.shapley_values_, one.shapley_values_, rtol=1e-12)
        return
    monkeypatch.setattr(_ridge_game, "_PAIR_SCORE", np.inf)
    assert HSICShapleySelector(4, random_state=5).fit(X, y).ranking_[[2, 3]].tolist() == [12, 7]


@pytest.mark.parametrize("n_samples", [4, 5, 7, 9])
def test_the_default_fits_on_as_few_rows_as_its_ridge_needs(n_samples):
    """Below 8 rows the finer trials have too few rows to score (U-centring needs 4) and
    are skipped; the fit still ranks every feature."""
    X, y = _high_frequency(n_samples, 0, n_features=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = HSICShapleySelector(n_features_to_select=2, random_state=0).fit(X, y)
    assert sorted(found.ranking_) == list(range(1, 7))


def test_only_the_five_candidates_of_most_evidence_are_tried(monkeypatch):
    """With the ANOVA game's values, a set-aside feature without positive evidence, or
    outside the five of most evidence, is not tried, even one the ridge would take; the
    others are decided as without evidence."""
    monkeypatch.setattr(_ridge_game, "_FINER_TRIES", 0)  # the trials at the median width
    rng = np.random.default_rng(8)
    X = rng.normal(size=(300, 8))
    y = X[:, 0] + np.sin(3 * X[:, 1]) + np.cos(2 * X[:, 2]) + np.sin(3 * X[:, 5])
    targets = ridge_targets(((y - y.mean()) / y.std())[:, None], ["rbf"])
    median = np.full(8, 0.5)
    aligned = np.r_[0.3, 0.5 * np.exp(-np.linspace(4.0, 8.0, 7))]
    every = additive_features(X, ["rbf"] * 8, aligned, median, targets)
    np.testing.assert_array_equal(every, _at_median(median, [1, 2, 5]))

    def additive_with(evidence):
        return additive_features(X, ["rbf"] * 8, aligned, median, targets, evidence=evidence)

    np.testing.assert_array_equal(additive_with(np.ones(8)), every)
    no_evidence_for_x5 = additive_with(np.array([9.0, 3, 2, 1, 1, 0, 1, 1]))
    np.testing.assert_array_equal(no_evidence_for_x5, _at_median(median, [1, 2]))
    # x5 sixth of the seven candidates by evidence (x0 is not one: it is not set aside).
    assert not additive_with(np.array([0.0, 7, 6, 5, 4, 2, 3, 1]))[5]
    assert additive_with(np.array([0.0, 7, 6, 5, 4, 3, 2, 1]))[5]


@pytest.mark.parametrize("n_jobs", [2, 3])
def test_trials_in_batches_answer_as_one_by_one(n_jobs):
    """Candidates tried n_jobs at a time: after one is taken, the rest of its batch is tried
    again against the new kernel, so several terms come out as in order."""
    rng = np.random.default_rng(8)
    X = rng.normal(size=(300, 8))
    y = X[:, 0] + np.sin(3 * X[:, 1]) + np.cos(2 * X[:, 2]) + np.sin(3 * X[:, 5])
    targets = ridge_targets(((y - y.mean()) / y.std())[:, None], ["rbf"])
    median = np.full(8, 0.5)
    aligned = np.r_[0.3, 0.5 * np.exp(-np.linspace(4.0, 8.0, 7))]  # all but x0 set aside
    one_by_one = additive_features(X, ["rbf"] * 8, aligned, median, targets)
    np.testing.assert_array_equal(one_by_one, _at_median(median, [1, 2, 5]))
    batched = additive_features(X, ["rbf"] * 8, aligned, median, targets, n_jobs=n_jobs)
    np.testing.assert_array_equal(batched, one_by_one)


def test_fits_computed_while_waiting_give_the_same_terms_and_are_not_computed_again(monkeypatch):
    """set_aside_fits (the wait for the ANOVA game) fits the aligned kernel
    and the set-aside trials most widened first while pending() holds; additive_features
    takes them as given, so the answer is the one computed without them."""
    monkeypatch.setattr(_ridge_game, "_FINER_TRIES", 0)  # the trials at the median width
    rng = np.random.default_rng(8)
    X = rng.normal(size=(300, 8))
    y = X[:, 0] + np.sin(3 * X[:, 1]) + np.cos(2 * X[:, 2]) + np.sin(3 * X[:, 5])
    targets = ridge_targets(((y - y.mean()) / y.std())[:, None], ["rbf"])
    median = np.full(8, 0.5)
    aligned = np.r_[0.3, 0.5 * np.exp(-np.linspace(4.0, 8.0, 7))]
    arguments = (X, ["rbf"] * 8, aligned, median, targets)
    assert set_aside_fits(lambda: False, *arguments) == {}
    every = set_aside_fits(lambda: True, *arguments)
    assert list(every) == [None, 7, 6, 5, 4, 3, 2, 1]  # the most widened first
    waits = iter([True, True, True, False])
    assert list(set_aside_fits(lambda: next(waits), *arguments)) == [None, 7, 6]
    for evidence in (None, np.ones(8), np.array([0.0, 7, 6, 5, 4, 3, 2, 1])):
        alone = additive_features(*arguments, evidence=evidence)
        for n_jobs in (None, 2):
            with_known = additive_features(
                *arguments, evidence=evidence, n_jobs=n_jobs, known_fits=every
            )
            np.testing.assert_array_equal(with_known, alone)
    # Known errors are used as they are: a made-up gain takes x3, which the ridge refuses.
    only_x3 = np.eye(8)[3]
    assert not additive_features(*arguments, evidence=only_x3).any()
    made_up = {None: (1.0, 0.1), 3: (0.5, 0.01)}
    made_up_terms = additive_features(*arguments, evidence=only_x3, known_fits=made_up)
    np.testing.assert_array_equal(made_up_terms, _at_median(median, [3]))


def test_planted_non_monotone_effects_are_ranked_on_top():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(600, 20))
    y = X[:, 0] + X[:, 1] ** 2 + np.sin(3 * X[:, 2]) + X[:, 3] + 0.5 * X[:, 4]
    y += 0.5 * rng.normal(size=600)
    selected = HSICShapleySelector(5, random_state=0).fit(X, y).get_support(indices=True)
    assert selected.tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize(
    "bandwidth, shape", [(1e-300, "the identity"), (1e-9, "the identity"), (1e300, "constant")]
)
def test_a_degenerate_kernel_is_named(bandwidth, shape):
    X, y = make_friedman1(60, 5, random_state=0)
    with pytest.warns(UserWarning, match=f"joint kernel is {shape}"):
        HSICShapleySelector(2, value_function="model", bandwidth=bandwidth).fit(X, y)


def test_a_sound_kernel_is_not_called_degenerate():
    X, y = make_friedman1(60, 5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        HSICShapleySelector(2, value_function="model").fit(X, y)


def test_the_anova_part_is_exact_on_a_bounded_number_of_rows(monkeypatch):
    """The ANOVA game beside the model game is the exact estimate on as many rows as its
    budget of pairs times features allows (1000 at d = 30), drawn uniformly: on every pair
    of a large sample it would cost more than the model game."""
    from pkex_select import _pairgame

    X, y = make_friedman1(1500, 30, noise=0.5, random_state=0)
    calls = []
    attribute = _pairgame.attribute

    def recording(statistic, factors, target, **options):
        calls.append((statistic, factors, target, options.get("value_function")))
        return attribute(statistic, factors, target, **options)

    monkeypatch.setattr(_pairgame, "attribute", recording)
    HSICShapleySelector(n_features_to_select=2, random_state=0).fit(X, y)
    [(statistic, factors, target, game)] = [call for call in calls if call[3] == "anova"]
    rows = subsample_rows(1500, 1000, 0)
    assert game == "anova" and statistic.estimate == "biased"
    assert factors.n_samples == 1000 and 1000 * 999 / 2 * 30 <= _EVIDENCE_WORK
    standardised = (X - X.mean(axis=0)) / X.std(axis=0)
    np.testing.assert_allclose(factors.X, standardised[rows], rtol=0, atol=1e-12)  # unit scale
    whole = HSIC.target(y)
    np.testing.assert_array_equal(target.Y, whole.Y[rows])
    np.testing.assert_array_equal(
        target.within(target.Y[None])[0], whole.within(whole.Y[None])[0][np.ix_(rows, rows)]
    )


@pytest.mark.parametrize(
    "kernels", [["rbf"] * 4, ["laplacian", "rbf", "cauchy", "delta"], ["delta", "cauchy"] * 2]
)
def test_the_joint_kernel_is_the_product_of_the_factor_tensor(kernels):
    """Summed exponents give the product of the factors to rounding, with a delta column's
    mismatch factor and an infinite gamma (factor 0 off equal values) too."""
    rng = np.random.default_rng(7)
    data = rng.standard_normal((40, 4))
    data[:, 3] = rng.integers(0, 3, 40)
    data[::5, 0] = data[0, 0]  # ties: distance 0 under an infinite gamma
    gammas = np.array([np.inf, 0.3, 1.7, 0.5])
    mismatch = np.array([0.0, 0.0, 0.0, 0.25])
    expected = np.prod(_factor_tensor(data, kernels, gammas, mismatch), axis=2)
    np.testing.assert_allclose(
        _joint_kernel(data, kernels, gammas, mismatch), expected, rtol=1e-13, atol=1e-300
    )


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 60),
    st.lists(st.sampled_from(["rbf", "laplacian", "cauchy", "delta"]), min_size=1, max_size=6),
    st.integers(0, 2**32 - 1),
)
def test_the_compiled_joint_kernel_is_its_numpy_twin(n_rows, kernels, seed):
    """The compiled exponent pass gives the NumPy path's bits: ties, an infinite gamma and
    gammas spanning many magnitudes included."""
    if not _integrals.NUMBA:
        pytest.skip("needs numba")
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((n_rows, len(kernels))) * 10.0 ** rng.integers(-3, 4)
    data[:: max(1, n_rows // 3)] = data[0]  # tied rows
    delta = np.array(kernels) == "delta"
    data[:, delta] = rng.integers(0, 3, (n_rows, delta.sum()))
    gammas = 10.0 ** rng.uniform(-4, 3, len(kernels))
    gammas[rng.random(len(kernels)) < 0.2] = np.inf
    mismatch = np.where(delta, 0.25, 0.0)
    np.testing.assert_array_equal(
        _joint_kernel(data, kernels, gammas, mismatch),
        _joint_kernel(data, kernels, gammas, mismatch, backend="numpy"),
    )


@pytest.mark.parametrize("noise", [1.0, 0.1])
def test_the_model_is_fitted_at_the_penalty_chosen_on_the_check_rows(monkeypatch, noise):
    """The ridge is fitted at check_penalty's penalty on the 400 check rows; where the
    additive terms' trials fitted that kernel already (at most one term taken), their
    penalty is taken, with the same bits."""
    seen = {}

    def penalty_spy(data, *args):
        seen["check rows"] = len(data)
        seen["penalty"] = check_penalty(data, *args)
        return seen["penalty"]

    def values_spy(data, *args, penalty=None, **kwargs):
        seen["model rows"], seen["fitted at"] = len(data), penalty
        return model_values(data, *args, penalty=penalty, **kwargs)

    def without_penalty(*args, **kwargs):
        terms, _, product_gammas = additive_features(*args, **kwargs)
        return terms, None, product_gammas

    monkeypatch.setattr(_selection, "check_penalty", penalty_spy)
    monkeypatch.setattr(_selection, "model_values", values_spy)
    X, y = make_friedman1(700, 5, noise=noise, random_state=0)
    found = HSICShapleySelector(value_function="model", random_state=0).fit(X, y)
    from_trials = seen.pop("fitted at")
    assert "check rows" not in seen  # the trials fitted the ridge's kernel on those rows
    monkeypatch.setattr(_selection, "additive_features", without_penalty)
    checked = HSICShapleySelector(value_function="model", random_state=0).fit(X, y)
    assert (seen["check rows"], seen["model rows"]) == (400, 700)
    assert seen["fitted at"] == seen["penalty"] == from_trials and from_trials in _PENALTIES
    np.testing.assert_array_equal(found.shapley_values_, checked.shapley_values_)


def _near_copy_reference(shares, data, numeric, anova_values):
    """near_copy_shares feature by feature, from its docstring."""
    varies = np.ptp(data, axis=0) > 0
    r = np.zeros((data.shape[1],) * 2)
    r[np.ix_(varies, varies)] = np.corrcoef(data[:, varies], rowvar=False)
    negative = anova_values[anova_values < 0]
    level = -negative.min() if negative.size else 0.0
    evident = (anova_values > 0) & (anova_values >= _selection._EVIDENT_LEVELS * level)
    lifted = shares.copy()
    for j in np.argsort(-shares, kind="stable"):
        if not (numeric[j] and varies[j]):
            continue
        others = [i for i in np.flatnonzero(numeric & varies) if i != j]
        r2 = {i: r[i, j] ** 2 for i in others if r[i, j] ** 2 >= _selection._COPY_R2}
        if not r2:
            continue
        twin = max(r2, key=lambda i: (r2[i] * shares[i], -i))
        above = [lifted[i] for i in np.flatnonzero(evident) if shares[i] > shares[j]]
        lifted[j] = max(shares[j], r2[twin] * min([lifted[twin]] + above))
    return lifted / lifted.sum()


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_copies=st.integers(0, 4), categorical=st.booleans())
def test_a_near_copy_is_lifted_to_its_twins_share_but_not_past_evidence(
    seed, n_copies, categorical
):
    """Against the rule computed feature by feature, to 1e-12; a result that adds up to 1
    and keeps every feature at least at its own share, relative to features no one's copy."""
    rng = np.random.default_rng(seed)
    n, d = 60, 8
    data = rng.normal(size=(n, d))
    data[:, 1 : 1 + n_copies] = data[:, [0]] + rng.uniform(0.1, 1.2) * rng.normal(
        size=(n, n_copies)
    )
    data[:, 6] = 3.0  # a constant column
    shares = rng.dirichlet(np.ones(d))
    anova_values = rng.normal(size=d)
    numeric = np.ones(d, dtype=bool)
    numeric[7] = not categorical
    lifted = _selection.near_copy_shares(shares, data, numeric, anova_values)
    expected = _near_copy_reference(shares, data, numeric, anova_values)
    np.testing.assert_allclose(lifted, expected, rtol=1e-12)
    np.testing.assert_allclose(lifted.sum(), 1.0, rtol=1e-12)
    # Every feature keeps at least its own share, relative to those no one's copy (5, 7).
    ratios = lifted / shares
    np.testing.assert_allclose(ratios[[5, 7]], ratios.min(), rtol=1e-12)


@pytest.mark.parametrize("entries", [1, 7, 40])
def test_near_copies_found_a_block_of_columns_at_a_time_are_those_found_at_once(
    monkeypatch, entries
):
    """Blocks of one column, of a few, and all at once give the same values."""
    rng = np.random.default_rng(entries)
    data = rng.normal(size=(50, 9))
    data[:, 1:4] = data[:, [0]] + 0.4 * rng.normal(size=(50, 3))
    data[:, 6] = data[:, 5] + 0.5 * rng.normal(size=50)
    shares, anova_values = rng.dirichlet(np.ones(9)), rng.normal(size=9)
    numeric = np.ones(9, dtype=bool)
    at_once = _selection.near_copy_shares(shares, data, numeric, anova_values)
    monkeypatch.setattr(_selection, "_COPY_ENTRIES", entries)
    in_blocks = _selection.near_copy_shares(shares, data, numeric, anova_values)
    np.testing.assert_allclose(in_blocks, at_once, rtol=1e-12)
    assert not np.allclose(at_once, shares)  # the copies were lifted


def test_a_copy_rises_past_noise_and_not_past_an_evident_feature():
    """A used feature, its copy the ridge left out (r^2 = 0.91), another relevant feature,
    a noise column the ridge spent some of its fit on and one it did not use."""
    rng = np.random.default_rng(0)
    signal = rng.normal(size=400)
    data = np.column_stack(
        [signal, signal + 0.33 * rng.normal(size=400), rng.normal(size=(400, 3))]
    )
    r2 = np.corrcoef(data[:, 0], data[:, 1])[0, 1] ** 2
    shares = np.array([0.6, 0.01, 0.25, 0.14, 0.0])
    numeric = np.ones(5, dtype=bool)

    def lifted_with(anova_values, numeric=numeric):
        return _selection.near_copy_shares(shares, data, numeric, np.array(anova_values))

    # Noise level 0.1: the third feature is evident (1.0 >= 0.4), the noise column not.
    lifted = lifted_with([1.3, 1.2, 1.0, 0.05, -0.1])
    np.testing.assert_allclose(lifted[1] / lifted[2], r2, rtol=1e-12)
    assert lifted[4] < lifted[3] < lifted[1] < lifted[2] < lifted[0]
    # Noise level 0.3: the third feature is not (1.0 < 1.2); the copy gets r^2 times its
    # twin's share, past it.
    lifted = lifted_with([1.3, 1.2, 1.0, 0.05, -0.3])
    np.testing.assert_allclose(lifted[1] / lifted[0], r2, rtol=1e-12)
    assert lifted[1] > lifted[2]
    # No negative value, no noise level: every positive value is evidence.
    lifted = lifted_with([1.3, 1.2, 1.0, 0.05, 0.0])
    np.testing.assert_allclose(lifted[1] / lifted[3], r2, rtol=1e-12)
    # A categorical column (codes) is no one's copy.
    unlifted = lifted_with([1.3, 1.2, 1.0, 0.05, -0.3], np.array([1, 0, 1, 1, 1], bool))
    np.testing.assert_allclose(unlifted, shares, rtol=1e-12)


@pytest.mark.parametrize("repetition", [6, 7])
def test_the_default_ranks_copies_above_a_noise_column_the_ridge_uses_as_much(
    monkeypatch, repetition
):
    """The planted blocks design at n = 200, data sets 6 and 7: the ridge uses a noise
    column as much as a copy it uses, and its ANOVA value (3.4 and 3.1 noise levels) is
    above the bar for unbacked shares, so it keeps its model share, above a copy the ridge
    leaves out. The near-copy rule lifts the copies past it; without the rule one stays
    below."""
    X, y, relevant, noise = _blocks(repetition)
    values = HSICShapleySelector(random_state=repetition).fit(X, y).shapley_values_
    assert values[relevant[:3]].min() > values[noise].max()
    monkeypatch.setattr(_selection, "_COPY_R2", np.inf)  # no feature is a near-copy
    unlifted = HSICShapleySelector(random_state=repetition).fit(X, y).shapley_values_
    assert unlifted[relevant[:3]].min() < unlifted[noise].max()
