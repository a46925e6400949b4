"""ProductKernelExplainer against 2^d enumeration of the removal game, for every model kind."""

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.gaussian_process import GaussianProcessClassifier, GaussianProcessRegressor
from sklearn.gaussian_process.kernels import (
    RBF,
    ConstantKernel,
    DotProduct,
    Matern,
    RationalQuadratic,
    WhiteKernel,
)
from sklearn.kernel_ridge import KernelRidge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import (
    MaxAbsScaler,
    MinMaxScaler,
    PolynomialFeatures,
    RobustScaler,
    StandardScaler,
)
from sklearn.svm import SVC, SVR, NuSVC, NuSVR, OneClassSVM

from pkex_select import ProductKernelExplainer
from tests.references import shapley_from_coalition_values

rng = np.random.default_rng(0)
N_FEATURES = 5
X = rng.normal(size=(80, N_FEATURES)) * [1, 2, 0.5, 1, 3] + [0, 1, -2, 0, 5]
y_reg = np.sin(X[:, 0]) + 0.3 * X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=80)
y_bin = (X[:, 0] + 0.5 * X[:, 1] > 0.5).astype(int)
y_multi = np.digitize(X[:, 0], [-0.5, 0.5])
X_test = rng.normal(size=(6, N_FEATURES)) * [1, 2, 0.5, 1, 3] + [0, 1, -2, 0, 5]
ALL_MASKS = np.array(
    [[(m >> j) & 1 for j in range(N_FEATURES)] for m in range(2**N_FEATURES)], dtype=bool
)

MODELS = {
    "svc": (lambda: SVC(gamma=0.2), y_bin),
    "svc_multi_ovr": (lambda: SVC(gamma=0.2, decision_function_shape="ovr"), y_multi),
    "nusvc_multi": (lambda: NuSVC(gamma=0.2, nu=0.3), y_multi),
    "svr": (lambda: SVR(gamma="scale", C=3.0), y_reg),
    "nusvr": (lambda: NuSVR(gamma=0.1), y_reg),
    "one_class": (lambda: OneClassSVM(gamma=0.1), None),
    "krr_rbf": (lambda: KernelRidge(kernel="rbf", gamma=0.1, alpha=0.1), y_reg),
    "krr_laplacian": (lambda: KernelRidge(kernel="laplacian", alpha=0.1), y_reg),
    "krr_multi": (
        lambda: KernelRidge(kernel="rbf", kernel_params={"gamma": 0.2}),
        np.column_stack([y_reg, y_bin]),
    ),
    "gpr": (
        lambda: GaussianProcessRegressor(
            ConstantKernel() * RBF(np.ones(N_FEATURES)) + WhiteKernel(), random_state=0
        ),
        y_reg,
    ),
    "gpr_normalized": (
        lambda: GaussianProcessRegressor(
            RBF(2.0) * ConstantKernel(2.0), normalize_y=True, alpha=1e-2
        ),
        y_reg,
    ),
    "gpr_sum_of_rbfs": (
        lambda: GaussianProcessRegressor(
            ConstantKernel(0.5) + RBF(1.0, "fixed") * RBF(3.0, "fixed") + RBF(0.5, "fixed"),
            optimizer=None,
            alpha=0.1,
        ),
        y_reg,
    ),
    "gpr_default_kernel": (lambda: GaussianProcessRegressor(alpha=0.1), y_reg),
    "gpc": (lambda: GaussianProcessClassifier(ConstantKernel() * RBF(), random_state=0), y_bin),
    "pipeline_standard": (lambda: make_pipeline(StandardScaler(), SVR()), y_reg),
    "pipeline_many": (
        lambda: make_pipeline(MinMaxScaler(), RobustScaler(), MaxAbsScaler(), SVC(gamma=0.5)),
        y_bin,
    ),
}


def fitted(name):
    make, y = MODELS[name]
    return make().fit(X, y) if y is not None else make().fit(X)


# The Gaussian processes' length scales of features y does not use run to their bounds
# (scikit-learn's ConvergenceWarning); the explanation is of the model as fitted, bounds or
# not. A mark, unlike the ini option, holds under `pytest -W error` too.
GP_AT_ITS_BOUNDS = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@GP_AT_ITS_BOUNDS
@pytest.mark.parametrize("name", sorted(MODELS))
def test_exact_against_enumeration_and_model_output(name):
    model = fitted(name)
    explainer = ProductKernelExplainer(model)
    explanation = explainer.explain(X_test)
    output = explainer.model_output(X_test)
    values = explanation.values
    assert values.shape[:2] == (len(X_test), N_FEATURES)
    # Efficiency: the values add up to the model's own output.
    np.testing.assert_allclose(
        values.sum(axis=1) + explanation.base_values, output, rtol=1e-10, atol=1e-10
    )
    # Exactness: the same values as 2^d enumeration of the removal game.
    game = explainer.coalition_value(X_test, ALL_MASKS)
    np.testing.assert_allclose(game[:, -1], output, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(game[:, 0], explanation.base_values, rtol=1e-12, atol=1e-12)
    flat_game = game.reshape(len(X_test), 2**N_FEATURES, -1)
    flat_values = values.reshape(len(X_test), N_FEATURES, -1)
    scale = np.abs(flat_game).max() + 1.0
    for i in range(len(X_test)):
        for o in range(flat_game.shape[2]):
            expected = shapley_from_coalition_values(flat_game[i, :, o], N_FEATURES)
            np.testing.assert_allclose(flat_values[i, :, o], expected, rtol=0, atol=1e-12 * scale)


def test_multiclass_has_one_output_per_class_pair():
    model = fitted("svc_multi_ovr")
    explanation = ProductKernelExplainer(model).explain(X_test)
    assert explanation.values.shape == (len(X_test), N_FEATURES, 3)
    assert explanation.output_names == ["0 vs 1", "0 vs 2", "1 vs 2"]
    assert model.decision_function_shape == "ovr"  # model_output did not change the model


def test_pipeline_values_are_for_raw_columns_and_frames_keep_names():
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(N_FEATURES)])
    model = make_pipeline(StandardScaler(), SVR()).fit(frame, y_reg)
    explainer = ProductKernelExplainer(model)
    assert explainer.feature_names_ == list(frame.columns)
    explanation = explainer.explain(frame.iloc[:4])
    np.testing.assert_array_equal(explanation.data, X[:4])
    np.testing.assert_allclose(
        explanation.values.sum(1) + explanation.base_values,
        model.predict(frame.iloc[:4]),
        rtol=1e-10,
    )
    table = explanation.to_frame()
    assert list(table.columns) == list(frame.columns) and len(table) == 4
    with pytest.raises(ValueError, match="columns"):
        explainer.explain(frame[frame.columns[::-1]])


def test_coalition_value_accepts_names_and_indices():
    frame = pd.DataFrame(X, columns=list("abcde"))
    model = SVR().fit(frame, y_reg)
    explainer = ProductKernelExplainer(model)
    by_name = explainer.coalition_value(frame.iloc[:3], [[], ["a", "c"], list("abcde")])
    by_index = explainer.coalition_value(frame.iloc[:3], [[], [0, 2], range(5)])
    np.testing.assert_array_equal(by_name, by_index)
    np.testing.assert_allclose(by_name[:, 2], model.predict(frame.iloc[:3]), rtol=1e-12)
    with pytest.raises(ValueError, match="Unknown feature"):
        explainer.coalition_value(frame.iloc[:3], [["z"]])


def test_multiclass_frame_has_output_level():
    explanation = ProductKernelExplainer(fitted("nusvc_multi")).explain(X_test)
    table = explanation.to_frame()
    assert table.columns.names == ["output", "feature"]
    assert table.shape == (len(X_test), 3 * N_FEATURES)


def test_to_shap_hands_over_centred_values_by_default():
    shap = pytest.importorskip("shap")
    model = fitted("svr")
    explanation = ProductKernelExplainer(model).explain(X_test)
    exact = explanation.to_shap(centred=False)
    assert isinstance(exact, shap.Explanation)
    np.testing.assert_array_equal(exact.values, explanation.values)
    centred = explanation.to_shap()
    np.testing.assert_allclose(centred.values.mean(axis=0), 0, atol=1e-12)
    # Both add up to the model output; the centred base value is the mean output.
    output = model.predict(X_test)
    for converted in (exact, centred):
        np.testing.assert_allclose(
            converted.values.sum(axis=1) + converted.base_values, output, rtol=1e-10, atol=1e-12
        )
    np.testing.assert_allclose(centred.base_values, output.mean(), rtol=1e-12)
    with pytest.raises(ValueError, match="one row leaves only zeros"):
        explanation[0].to_shap()


def test_explanation_indexing_by_rows_and_features():
    explanation = ProductKernelExplainer(fitted("nusvc_multi")).explain(X_test)
    first = explanation[0]
    assert len(first) == 1 and first.values.shape == (1,) + explanation.values.shape[1:]
    np.testing.assert_array_equal(first.values[0], explanation.values[0])
    np.testing.assert_array_equal(explanation[:5].base_values, explanation.base_values[:5])
    mask = np.arange(len(explanation)) % 2 == 0
    np.testing.assert_array_equal(explanation[mask].data, explanation.data[mask])
    names = explanation.feature_names
    by_name = explanation[[names[2], names[0]]]
    assert by_name.feature_names == [names[2], names[0]]
    np.testing.assert_array_equal(by_name.values, explanation.values[:, [2, 0]])
    np.testing.assert_array_equal(explanation[3:6, 1].values, explanation.values[3:6, [1]])
    np.testing.assert_array_equal(explanation[names[1]].data, explanation.data[:, [1]])
    with pytest.raises(KeyError, match="no feature named 'nope'"):
        explanation["nope"]
    with pytest.raises(IndexError):
        explanation[1, 2, 3]
    pairwise = ProductKernelExplainer(fitted("svr")).explain(X_test, index="SII", max_order=2)
    np.testing.assert_array_equal(
        pairwise[:2, [0, 3]].values, pairwise.values[:2][:, [0, 3]][:, :, [0, 3]]
    )


def test_explanation_reprs_are_short():
    explanation = ProductKernelExplainer(fitted("nusvc_multi")).explain(X_test)
    text = repr(explanation)
    assert len(text) < 300 and f"{len(explanation)} rows" in text and "outputs [" in text
    assert repr(explanation[0]).startswith("Explanation(index='SV', 1 row,")
    html = explanation._repr_html_()
    assert "<table" in html and "base value" in html and html.count("<tr>") <= 12
    pairwise = ProductKernelExplainer(fitted("svr")).explain(X_test, index="SII", max_order=2)
    assert "<table" not in pairwise._repr_html_()


def test_refitting_the_model_is_detected():
    model = SVR(gamma=0.3).fit(X, y_reg)
    explainer = ProductKernelExplainer(model)
    explainer.explain(X_test)
    model.fit(X[:, :3], y_reg)
    for call in (
        explainer.explain,
        explainer.model_output,
        lambda X: explainer.coalition_value(X, [[0]]),
    ):
        with pytest.raises(ValueError, match="fitted again after this explainer was built"):
            call(X_test[:, :3])


def test_pyarrow_tables_are_explained_like_frames():
    pa = pytest.importorskip("pyarrow")
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(N_FEATURES)])
    model = SVR(gamma=0.3).fit(frame, y_reg)
    explainer = ProductKernelExplainer(model)
    table = pa.Table.from_pandas(frame.iloc[:4])
    np.testing.assert_array_equal(
        explainer.explain(table).values, explainer.explain(frame.iloc[:4]).values
    )
    np.testing.assert_allclose(explainer.model_output(table), model.predict(frame.iloc[:4]))


@pytest.mark.parametrize(
    "model, y",
    [
        (SVC(kernel="poly"), y_bin),
        (SVR(kernel="sigmoid"), y_reg),
        (SVR(kernel="linear"), y_reg),
        (KernelRidge(kernel="cosine"), y_reg),
        (KernelRidge(kernel="polynomial"), y_reg),
        (GaussianProcessRegressor(Matern()), y_reg),
        (GaussianProcessRegressor(RationalQuadratic()), y_reg),
        (GaussianProcessRegressor(DotProduct()), y_reg),
    ],
)
def test_non_product_kernels_are_refused_with_a_reason(model, y):
    with pytest.raises(TypeError, match="not a product of one-dimensional kernels"):
        ProductKernelExplainer(model.fit(X, y))


def test_other_errors():
    with pytest.raises(NotFittedError):
        ProductKernelExplainer(SVR())
    with pytest.raises(NotFittedError):
        ProductKernelExplainer(make_pipeline(StandardScaler(), SVR()))
    with pytest.raises(TypeError, match="not supported"):
        ProductKernelExplainer(StandardScaler().fit(X))
    with pytest.raises(TypeError, match="does not transform each feature on its own"):
        ProductKernelExplainer(make_pipeline(PolynomialFeatures(), SVR()).fit(X, y_reg))
    with pytest.raises(ValueError, match="binary"):
        ProductKernelExplainer(GaussianProcessClassifier().fit(X, y_multi))
    explainer = ProductKernelExplainer(fitted("svr"))
    with pytest.raises(ValueError, match="expects 5"):
        explainer.explain(X_test[:, :3])
    with pytest.raises(ValueError, match="NaN|infinity"):
        explainer.explain(np.where(X_test > 2, np.nan, X_test))
    with pytest.raises(ValueError, match="feature names"):
        ProductKernelExplainer(fitted("svr"), feature_names=["a"])
