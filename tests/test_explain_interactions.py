"""The explainer's observational value function and interaction indices."""

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, SVR

from pkex_select import ProductKernelExplainer, plotting
from pkex_select.kernels import factor_tensor
from tests.references import interaction_reference, shapley_from_coalition_values

ALL_MASKS = np.array([[(s >> j) & 1 for j in range(5)] for s in range(32)], dtype=bool)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 5))
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2]
    return X, y


def _enumerated(explainer, rows, index):
    v = explainer.coalition_value(rows, ALL_MASKS)
    if index == "SV":
        return np.array([shapley_from_coalition_values(game, 5) for game in v])
    return np.array([interaction_reference(game, 5, index) for game in v])


@pytest.mark.parametrize("value_function", ["baseline", "observational"])
@pytest.mark.parametrize("index", ["SV", "SII", "BII", "STII", "k-SII", "Moebius"])
def test_explanations_match_enumeration_of_the_model_game(data, value_function, index):
    X, y = data
    model = SVR(gamma=0.4).fit(X, y)
    explainer = ProductKernelExplainer(model, value_function=value_function, background=X)
    order = 1 if index == "SV" else 2
    explanation = explainer.explain(X[:3], index=index, max_order=order)
    expected = _enumerated(explainer, X[:3], index)
    np.testing.assert_allclose(
        explanation.values, expected, rtol=0, atol=1e-10 * np.abs(expected).max()
    )
    assert explanation.index == index and explanation.max_order == order


def test_observational_game_replaces_removed_factors_by_background_means(data):
    X, y = data
    model = SVR(gamma=0.4).fit(X, y)
    background = X[:40]
    explainer = ProductKernelExplainer(model, value_function="observational", background=background)
    points, weights = model.support_vectors_, model.dual_coef_[0]
    means = factor_tensor(background, points, "rbf", np.full(5, 0.4)).mean(axis=0)
    x = X[7]
    own = factor_tensor(x[None], points, "rbf", np.full(5, 0.4))[0]
    mask = np.array([True, False, True, False, False])
    by_hand = weights @ np.prod(np.where(mask, own, means), axis=1) + model.intercept_[0]
    assert explainer.coalition_value(x[None], mask[None])[0, 0] == pytest.approx(by_hand)
    explanation = explainer.explain(X[:5])
    np.testing.assert_allclose(
        explanation.base_values, weights @ np.prod(means, axis=1) + model.intercept_[0]
    )
    np.testing.assert_allclose(
        explanation.values.sum(axis=1) + explanation.base_values, model.predict(X[:5]), atol=1e-12
    )


# The length scale of a feature y does not use runs to its bound (a ConvergenceWarning).
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_observational_background_defaults_to_the_models_points(data):
    X, y = data
    model = GaussianProcessRegressor(ConstantKernel() * RBF(np.ones(5))).fit(X[:60], y[:60])
    default = ProductKernelExplainer(model, value_function="observational").explain(X[:3])
    training = ProductKernelExplainer(
        model, value_function="observational", background=X[:60]
    ).explain(X[:3])
    np.testing.assert_allclose(default.values, training.values, atol=1e-12)


def test_background_goes_through_the_pipeline(data):
    X, y = data
    pipeline = make_pipeline(StandardScaler(), SVR()).fit(X * 10 + 3, y)
    explainer = ProductKernelExplainer(
        pipeline, value_function="observational", background=X * 10 + 3
    )
    explanation = explainer.explain(X[:4] * 10 + 3)
    np.testing.assert_allclose(
        explanation.values.sum(axis=1) + explanation.base_values,
        pipeline.predict(X[:4] * 10 + 3),
        atol=1e-12,
    )


def test_multiclass_interactions_have_an_outputs_axis(data):
    X, y = data
    model = SVC().fit(X, np.digitize(y, [-0.5, 0.5]))
    explanation = ProductKernelExplainer(model).explain(X[:2], index="k-SII", max_order=2)
    assert explanation.values.shape == (2, 5, 5, 3)
    # k-SII is efficient: diagonal plus upper triangle add up to the output.
    totals = np.triu(np.moveaxis(explanation.values, 3, 1)).sum(axis=(2, 3))
    np.testing.assert_allclose(
        totals + explanation.base_values,
        ProductKernelExplainer(model).model_output(X[:2]),
        atol=1e-12,
    )


def test_order_two_explanations_refuse_order_one_views(data):
    pytest.importorskip("matplotlib").use("Agg")
    X, y = data
    explanation = ProductKernelExplainer(SVR().fit(X, y)).explain(X[:3], index="SII", max_order=2)
    with pytest.raises(ValueError, match="SII interactions"):
        explanation.to_frame()
    with pytest.raises(ValueError, match="plotting.interactions"):
        plotting.bar(explanation)
    ax = plotting.interactions(explanation)
    assert len(ax.get_xticklabels()) == 5
    ax = plotting.interactions(explanation, row=0, max_display=3)
    assert len(ax.get_yticklabels()) == 3
    first_order = ProductKernelExplainer(SVR().fit(X, y)).explain(X[:3])
    with pytest.raises(ValueError, match="max_order=2"):
        plotting.interactions(first_order)


def test_invalid_value_function_index_and_background(data):
    X, y = data
    model = SVR().fit(X, y)
    with pytest.raises(ValueError, match="value_function must be"):
        ProductKernelExplainer(model, value_function="interventional")
    with pytest.raises(ValueError, match="background has 3 features"):
        ProductKernelExplainer(model, value_function="observational", background=X[:, :3])
    with pytest.raises(ValueError, match="index must be one of"):
        ProductKernelExplainer(model).explain(X[:2], index="FSII", max_order=2)
    with pytest.raises(ValueError, match="max_order=2"):
        ProductKernelExplainer(model).explain(X[:2], index="SII")


def test_centred_importance_removes_the_per_feature_offset():
    rng = np.random.default_rng(1)
    values = rng.normal(size=(200, 3)) * [1.0, 0.1, 0.1] + [0.0, 5.0, -5.0]
    importance = plotting.centred_importance(values)
    assert np.argmax(importance) == 0
    assert np.argmax(np.abs(values).mean(axis=0)) != 0
