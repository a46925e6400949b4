"""Awkward but legitimate input, as users bring it: each ends in a right answer or a clear error.

Every test here reproduces an input that once broke a public entry point (issue 10).
"""

import importlib.util
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse
from sklearn.kernel_ridge import KernelRidge
from sklearn.svm import SVC, SVR

import pkex_select
from pkex_select import (
    HSICShapleySelector,
    MMDShapleyAttributor,
    ProductKernelExplainer,
    hsic_shapley_values,
    mmd_shapley_values,
    shapley_values,
)
from pkex_select._integrals import loo_integrals_numba
from pkex_select._validation import TargetTypeWarning, encode_labels, is_class_labels
from pkex_select.kernels import gram_matrices

rng = np.random.default_rng(0)
X = rng.normal(size=(90, 4))
y_labels = np.where(X[:, 1] + 0.3 * rng.normal(size=90) > 0, "yes", "no")
y_cont = np.sin(2 * X[:, 2]) + 0.1 * rng.normal(size=90)


# ----------------------------------------------------------------------- installation


def test_compiled_kernel_caches_outside_the_package():
    # A cache inside pkex_select/ outlives `pip uninstall` and shadows an editable install.
    cache_path = Path(loo_integrals_numba._cache.cache_path).resolve()
    package = Path(pkex_select.__file__).resolve().parent
    assert package not in cache_path.parents and cache_path != package


# --------------------------------------------------------------------- labels and targets


@pytest.mark.parametrize(
    "make",
    [
        lambda y: pd.Series(y),
        lambda y: np.asarray(y, dtype=object),
        lambda y: pd.Categorical(y),
        lambda y: pd.Series(y, dtype="category"),
        lambda y: list(y),
    ],
)
def test_string_labels_in_every_container(make):
    expected = HSICShapleySelector().fit(X, y_labels).shapley_values_
    selector = HSICShapleySelector().fit(X, make(y_labels))
    assert selector.target_kernel_ == "delta"
    np.testing.assert_allclose(selector.shapley_values_, expected, rtol=1e-13)


@pytest.mark.parametrize(
    "y",
    [
        np.array(["a", None, "b"] * 30, dtype=object),
        pd.Series(["a", None, "b"] * 30),
        np.array([1, 2, None] * 30, dtype=object),
    ],
)
def test_missing_labels_are_named(y):
    with pytest.raises(ValueError, match="missing values"):
        HSICShapleySelector().fit(X, y)
    with pytest.raises(ValueError, match="missing values"):
        MMDShapleyAttributor().fit(X, y)
    with pytest.raises(ValueError, match="missing values"):
        mmd_shapley_values(gram_matrices(X[:, :2], "rbf", 0.5), y)


def test_labels_are_compared_by_value():
    labels, codes = encode_labels(np.array([1, 1.0, "1", 2], dtype=object))
    assert len(labels) == 3 and codes[0] == codes[1] != codes[2]
    labels, codes = encode_labels(np.array(["b", 1, "b"], dtype=object))
    assert set(labels) == {"b", 1} and codes[0] == codes[2] != codes[1]


@pytest.mark.parametrize("scale", [1e300, 1e-300, 3.7e155, 1e-170])
def test_values_do_not_depend_on_the_scale_of_the_target(scale):
    expected = HSICShapleySelector().fit(X, y_cont)
    scaled = HSICShapleySelector().fit(X, y_cont * scale)
    # The model game solves a ridge system whose condition number reaches about 1e7: the
    # standardised targets' last-digit differences reach the values at 1e-9 of the largest.
    largest = np.abs(expected.shapley_values_).max()
    np.testing.assert_allclose(
        scaled.shapley_values_, expected.shapley_values_, rtol=1e-9, atol=1e-9 * largest
    )


@pytest.mark.parametrize("scale", [1e300, 1e-300, 3.7e155, 1e-170])
def test_values_do_not_depend_on_the_scale_of_a_feature(scale):
    expected = HSICShapleySelector(n_features_to_select=1).fit(X, y_cont)
    scaled = HSICShapleySelector(n_features_to_select=1).fit(X * [1, 1, scale, 1], y_cont)
    largest = np.abs(expected.shapley_values_).max()  # see the test above
    np.testing.assert_allclose(
        scaled.shapley_values_, expected.shapley_values_, rtol=1e-9, atol=1e-9 * largest
    )
    assert list(scaled.get_support(indices=True)) == [2]
    shift = MMDShapleyAttributor(n_features_to_select=1).fit(
        X * [1, 1, scale, 1] + [0, 0, 2 * scale, 0] * (np.arange(90) >= 45)[:, None],
        np.arange(90) >= 45,
    )
    assert list(shift.get_support(indices=True)) == [2]


def test_integer_targets_with_many_values_are_continuous():
    months = np.round(30 * X[:, 0] + 100).astype(int)  # about 50 distinct values, n = 90
    assert np.unique(months).size > 40
    selector = HSICShapleySelector().fit(X, months)
    assert selector.target_kernel_ == "rbf"
    # Small integer codes stay classes, and so do two values whatever n is.
    assert HSICShapleySelector().fit(X, (X[:, 0] > 0).astype(int)).target_kernel_ == "delta"
    assert HSICShapleySelector().fit(X, np.digitize(X[:, 0], [-1, 0, 1])).target_kernel_ == "delta"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert is_class_labels(np.arange(200) % 5)
        assert not is_class_labels(np.arange(200) % 60)
        assert not is_class_labels(np.linspace(0, 1, 200))
        assert is_class_labels(np.array(["a", "b", "c"] * 10))
        assert is_class_labels(np.arange(30) % 3 + 0.0, categorical_dtype=True)
    # Fewer than two samples per value on average: continuous.
    assert not is_class_labels(np.arange(8))


@pytest.mark.parametrize("n_distinct, classes", [(15, True), (30, False)])
def test_borderline_integer_targets_warn(n_distinct, classes):
    y = np.arange(300) % n_distinct
    with pytest.warns(TargetTypeWarning, match="distinct integer values"):
        assert is_class_labels(y) == classes


def test_the_anova_game_needs_three_samples():
    with pytest.raises(ValueError, match="at least 4 samples; got 3. Use value_function="):
        HSICShapleySelector(value_function="anova").fit(X[:3], y_cont[:3])
    # The paper's game is defined on two samples; the model game's leave-one-out fit needs 4.
    with pytest.warns(UserWarning, match="Every Shapley value is 0.*too few samples"):
        HSICShapleySelector(value_function="baseline").fit(X[:2], y_cont[:2])
    fitted = HSICShapleySelector(value_function="baseline").fit(X[:3], y_cont[:3])
    assert np.all(np.isfinite(fitted.shapley_values_)) and np.any(fitted.shapley_values_)
    assert HSICShapleySelector().fit(X[:4], y_cont[:4]).value_function_ == "model+anova"


def test_constant_columns_rank_last_and_are_never_selected():
    data = np.column_stack([X, np.full(90, 3.0), np.full(90, 0.1), X[:, 0] * 0])
    for selector in [
        HSICShapleySelector(n_features_to_select=7),
        HSICShapleySelector(threshold=-np.inf),
    ]:
        selector.fit(data, y_cont)
        assert np.all(selector.ranking_[4:] > selector.ranking_[:4, None])
        np.testing.assert_array_equal(selector.shapley_values_[4:], 0.0)
        assert not selector.get_support()[4:].any() and selector.get_support()[:4].all()
    attributor = MMDShapleyAttributor(n_features_to_select=7).fit(data, np.arange(90) % 2)
    assert not attributor.get_support()[4:].any()


# ------------------------------------------------------------------------------ explainer


def test_kernel_ridge_is_explained_with_the_gamma_it_uses():
    # scikit-learn ignores kernel_params for named kernels.
    model = KernelRidge(kernel="rbf", kernel_params={"gamma": 0.7}).fit(X, y_cont)
    explanation = ProductKernelExplainer(model).explain(X[:5])
    np.testing.assert_allclose(
        explanation.values.sum(1) + explanation.base_values,
        model.predict(X[:5]),
        rtol=1e-10,
        atol=1e-12,
    )


@pytest.mark.parametrize("model", [SVC(gamma=0.4), SVR(gamma=0.4), KernelRidge(kernel="rbf")])
def test_models_fitted_on_sparse_data(model):
    sparse = scipy.sparse.csr_matrix(np.where(np.abs(X) > 0.5, X, 0.0))
    target = y_labels if isinstance(model, SVC) else y_cont
    model.fit(sparse, target)
    explainer = ProductKernelExplainer(model)
    explanation = explainer.explain(sparse[:6])
    np.testing.assert_allclose(
        explanation.values.sum(1) + explanation.base_values,
        explainer.model_output(sparse[:6]),
        rtol=1e-10,
        atol=1e-12,
    )
    dense = explainer.explain(sparse[:6].toarray())
    np.testing.assert_allclose(explanation.values, dense.values, rtol=1e-13)


# ------------------------------------------------------------- functions on Gram matrices


@pytest.mark.parametrize(
    "n, params, message",
    [
        (2, {"estimate": "unbiased"}, "at least 4 samples"),
        (3, {"estimate": "unbiased"}, "at least 4 samples"),
        (10, {"estimate": "block", "block_size": 11}, r"at least 11 samples \(one block\)"),
        (10, {"estimate": "block", "block_size": 1}, "block_size"),
        (10, {"estimate": "block", "block_size": 0}, "block_size"),
        (10, {"estimate": "block", "n_repetitions": 0}, "n_repetitions"),
        (10, {"estimate": "nope"}, "estimate"),
    ],
)
def test_hsic_function_validates_its_parameters(n, params, message):
    K = gram_matrices(X[:n, :2], "rbf", 0.5)
    L = gram_matrices(y_cont[:n, None], "rbf", 0.5)[0]
    with pytest.raises(ValueError, match=message):
        hsic_shapley_values(K, L, **params)


@pytest.mark.parametrize(
    "n, y, error, message",
    [
        (1, ["a"], ValueError, "MMD needs at least 2 samples"),
        (6, ["a"] * 6, ValueError, "single sample"),
        (6, None, ValueError, "'y' parameter"),
        (6, 3, ValueError, "'y' parameter"),
    ],
)
def test_mmd_function_validates_its_input(n, y, error, message):
    with pytest.raises(error, match=message):
        mmd_shapley_values(gram_matrices(X[:n, :2], "rbf", 0.5), y)


# ---------------------------------------------------------------- frames and parameters


def test_duplicate_column_names():
    # scikit-learn refuses duplicate names; say so before it does, and name them.
    frame = pd.DataFrame(X[:, :3], columns=["a", "a", "c"])
    for categorical in [None, ["c"]]:
        with pytest.raises(ValueError, match="duplicate column names: a;"):
            HSICShapleySelector(categorical_features=categorical).fit(frame, y_cont)
    frame.columns = ["a", "b", "c"]
    frame["c"] = "text"
    with pytest.raises(ValueError, match=r"non-numeric values in c\. Declare"):
        HSICShapleySelector(categorical_features=None).fit(frame, y_cont)


def test_text_category_and_boolean_columns_by_dtype():
    # categorical_features="from_dtype" (the default): text and category columns get the
    # delta kernel, as if listed; booleans are numbers in pandas, polars and pyarrow alike.
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(
        {
            "a": rng.normal(size=120),
            "site": rng.choice(["x", "y", "z"], 120),
            "grade": pd.Categorical(rng.choice([1, 2], 120)),
            "flag": rng.random(120) > 0.5,
        }
    )
    target = frame["a"] + (frame["site"] == "x") + frame["flag"]
    default = HSICShapleySelector(random_state=0).fit(frame, target)
    listed = HSICShapleySelector(categorical_features=["site", "grade"], random_state=0)
    np.testing.assert_array_equal(
        default.shapley_values_, listed.fit(frame, target).shapley_values_
    )
    np.testing.assert_array_equal(default._categorical_mask_, [False, True, True, False])
    pl = pytest.importorskip("polars")
    polars_frame = pl.from_pandas(frame.drop(columns="grade"))
    from_polars = HSICShapleySelector(random_state=0).fit(polars_frame, target.to_numpy())
    from_pandas = HSICShapleySelector(random_state=0).fit(frame.drop(columns="grade"), target)
    np.testing.assert_array_equal(from_polars.shapley_values_, from_pandas.shapley_values_)
    # An array carries one dtype for all columns: nothing is categorical by dtype.
    with pytest.raises(ValueError, match="non-numeric values"):
        HSICShapleySelector().fit(frame.to_numpy().astype(str), target)


@pytest.mark.parametrize("spec", [[1.7], [True, 2], [10], ["nope"]])
def test_categorical_features_must_name_columns(spec):
    with pytest.raises(ValueError, match="categorical"):
        HSICShapleySelector(categorical_features=spec).fit(X, y_cont)


def test_a_categorical_column_of_equal_numbers_is_constant():
    frame = pd.DataFrame(X, columns=list("abcd"))
    frame["code"] = pd.Series([1, 1.0] * 45, dtype=object)
    selector = HSICShapleySelector(categorical_features=["code"]).fit(frame, y_cont)
    assert selector.shapley_values_[-1] == 0.0 and selector.ranking_[-1] == 5


def test_categorical_columns_with_missing_values_are_refused():
    frame = pd.DataFrame(X, columns=list("abcd"))
    frame["site"] = ["x", None, "y"] * 30
    with pytest.raises(ValueError, match="categorical column site has missing values"):
        HSICShapleySelector(categorical_features=["site"]).fit(frame, y_cont)


@pytest.mark.parametrize("chunk_size", [1.5, 0, -3, True, "4"])
def test_chunk_size_must_be_a_positive_integer(chunk_size):
    with pytest.raises(ValueError, match="chunk_size must be a positive integer"):
        shapley_values(np.full((4, 3), 0.5), np.ones(4), chunk_size=chunk_size)


def test_ranking_plot_needs_one_name_per_value():
    pytest.importorskip("matplotlib")
    from pkex_select.plotting import ranking

    with pytest.raises(ValueError, match="one feature name per value"):
        ranking([0.3, 0.2, 0.1], ["a", "b"])
    with pytest.raises(ValueError, match="pvalues"):
        ranking([0.3, 0.2], ["a", "b"], pvalues=[0.1])


# -------------------------------------------------------------------------- documentation


def test_design_notes_cited_by_the_code_are_in_the_repository():
    root = Path(pkex_select.__file__).resolve().parents[1]
    cited = set()
    for module in (root / "pkex_select").glob("*.py"):
        cited |= set(re.findall(r"\b([\w/]+\.md)\b", module.read_text()))
    assert cited, "the engine's docstring cites the design notes"
    for path in cited:
        assert (root / path).is_file(), f"{path} is cited but missing"


def test_no_module_reads_another_modules_private_names():
    import ast

    package = Path(pkex_select.__file__).resolve().parent
    modules = {path.stem for path in package.glob("*.py")}
    offences = []
    for path in package.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                offences += [
                    f"{path.name}: from .{node.module} import {alias.name}"
                    for alias in node.names
                    if alias.name.startswith("_") and node.module is not None
                ]
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and isinstance(node.value, ast.Name)
                and node.value.id in modules
                and node.value.id != "self"
            ):
                offences.append(f"{path.name}: {node.value.id}.{node.attr}")
    assert offences == []


def test_polars_frames_work_wherever_pandas_frames_do():
    pl = pytest.importorskip("polars")
    from pkex_select import MMDShapleyAttributor, attribute_shift

    data = np.random.default_rng(7).normal(size=(80, 3))
    target = data[:, 0] + 0.1 * np.random.default_rng(8).normal(size=80)
    frame = pl.DataFrame({"a": data[:, 0], "b": data[:, 1], "c": data[:, 2]})
    fitted = HSICShapleySelector(1).fit(frame, target)
    reference = HSICShapleySelector(1).fit(pd.DataFrame(data, columns=list("abc")), target)
    np.testing.assert_array_equal(fitted.shapley_values_, reference.shapley_values_)
    assert list(fitted.feature_names_in_) == ["a", "b", "c"]
    assert fitted.set_output(transform="polars").transform(frame).columns == ["a"]
    labelled = frame.with_columns(pl.Series("site", ["x", "y"] * 40))
    assert HSICShapleySelector(categorical_features=["site"]).fit(labelled, target).ranking_[0] == 1
    with pytest.raises(ValueError, match="non-numeric values in site"):
        HSICShapleySelector(categorical_features=None).fit(labelled, target)
    assert HSICShapleySelector().fit(labelled, target).ranking_[0] == 1
    shift = attribute_shift(
        frame[:40], frame[40:].with_columns(pl.col("b") + 2.0), n_features_to_select=1
    )
    np.testing.assert_array_equal(shift.get_support(indices=True), [1])
    groups = pl.Series(np.repeat(["p", "q"], 40))
    assert list(MMDShapleyAttributor(1).fit(frame, groups).classes_) == ["p", "q"]


def test_pyarrow_tables_work_wherever_pandas_frames_do():
    pa = pytest.importorskip("pyarrow")
    from pkex_select import attribute_shift

    data = np.random.default_rng(7).normal(size=(80, 3))
    target = data[:, 0] + 0.1 * np.random.default_rng(8).normal(size=80)
    frame = pd.DataFrame(data, columns=list("abc"))
    table = pa.Table.from_pandas(frame)
    fitted = HSICShapleySelector(1).fit(table, pa.array(target))
    reference = HSICShapleySelector(1).fit(frame, target)
    np.testing.assert_array_equal(fitted.shapley_values_, reference.shapley_values_)
    assert list(fitted.feature_names_in_) == ["a", "b", "c"]
    np.testing.assert_array_equal(fitted.transform(table), data[:, :1])
    labelled = pa.Table.from_pandas(frame.assign(site=["x", "y"] * 40))
    with pytest.raises(ValueError, match="non-numeric values in site"):
        HSICShapleySelector(categorical_features=None).fit(labelled, target)
    assert HSICShapleySelector().fit(labelled, target)._categorical_mask_.tolist() == [
        False,
        False,
        False,
        True,
    ]
    moved = pa.Table.from_pandas(frame.iloc[40:].assign(b=frame.b.iloc[40:] + 2.0))
    shift = attribute_shift(pa.Table.from_pandas(frame.iloc[:40]), moved, n_features_to_select=1)
    np.testing.assert_array_equal(shift.get_support(indices=True), [1])


def test_a_threshold_must_be_a_number():
    X = np.random.default_rng(0).normal(size=(30, 3))
    with pytest.raises(ValueError, match="'threshold' parameter .* Got nan"):
        HSICShapleySelector(threshold=float("nan")).fit(X, X[:, 0])


def test_the_warning_classes_are_importable_from_the_package():
    assert pkex_select.TargetTypeWarning is TargetTypeWarning
    assert issubclass(pkex_select.IdentifierColumnWarning, UserWarning)
    assert {"TargetTypeWarning", "IdentifierColumnWarning"} <= set(pkex_select.__all__)


def _extreme_fits():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    y = X[:, 0] + rng.normal(size=30)
    for kernel in ("rbf", "laplacian", "cauchy"):
        for bandwidth in (1e-300, 1e-8, 1e300):
            yield HSICShapleySelector(kernel=kernel, bandwidth=bandwidth), X, y
        yield HSICShapleySelector(kernel=kernel, scales=[1e-8, 1e8]), X, y
    yield HSICShapleySelector(estimate="unbiased"), X, np.r_[np.ones(29), 2.0]
    yield HSICShapleySelector(value_function="baseline"), X[:2], y[:2]
    yield HSICShapleySelector(), X[:4], y[:4]
    yield MMDShapleyAttributor(), np.c_[np.ones(10), np.arange(10.0)], [0] * 5 + [1] * 5


@pytest.mark.parametrize("selector, X, y", list(_extreme_fits()))
def test_extreme_inputs_raise_no_numpy_warnings(selector, X, y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        selector.set_params(n_permutations=9).fit(X, y)
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert np.all(np.isfinite(selector.shapley_values_))
    # Values that are all 0 (kernels at an extreme bandwidth) say that the selection is void.
    all_zero = not np.any(selector.shapley_values_) and not selector._constant_mask_.all()
    assert all_zero == any("Every Shapley value is 0" in str(w.message) for w in caught)


def test_a_missing_value_in_a_nullable_column_beside_text_is_called_missing():
    """pandas' NA in an Int64 column of a frame with a text column was reported as a
    non-numeric value; it is a missing value, and the message says what to do."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame(
        {
            "count": pd.array(rng.integers(0, 9, 30), dtype="Int64"),
            "city": rng.choice(["Oslo", "Rome"], 30),
        }
    )
    X.loc[3, "count"] = pd.NA
    with pytest.raises(ValueError, match=r"missing values \(None, NaN or pd.NA\) in 1 row of"):
        HSICShapleySelector(1).fit(X, rng.normal(size=30))


def test_nullable_numbers_beside_a_category_column_are_numbers():
    """Int64, boolean and pyarrow numbers beside a category column failed in scikit-learn's
    cast of the whole frame ("Cannot cast str dtype to float64"); they are read as the float
    columns they hold, and a pd.NA among them is named as a missing value."""
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 9, 60)
    floats = pd.DataFrame(
        {
            "count": counts.astype(float),
            "flag": (counts > 4).astype(float),
            "size": rng.normal(size=60),
            "city": pd.Categorical(rng.choice(["Oslo", "Rome"], 60)),
        }
    )
    dtypes = {"count": "Int64", "flag": "boolean"}
    if importlib.util.find_spec("pyarrow"):  # not at the declared minimums
        dtypes["size"] = "float64[pyarrow]"
    nullable = floats.astype(dtypes)
    y = counts + rng.normal(size=60)
    expected = HSICShapleySelector(2, random_state=0).fit(floats, y).shapley_values_
    values = HSICShapleySelector(2, random_state=0).fit(nullable, y).shapley_values_
    np.testing.assert_array_equal(values, expected)
    nullable.loc[[3, 7], "count"] = pd.NA
    with pytest.raises(
        ValueError, match=r"missing values \(None, NaN or pd.NA\) in 2 rows of count"
    ):
        HSICShapleySelector(2).fit(nullable, y)


@pytest.mark.parametrize(
    "estimator, y",
    [
        (HSICShapleySelector(2), np.linspace(0.1, 1.2, 12) ** 2),
        (MMDShapleyAttributor(), [0] * 6 + [1] * 6),
    ],
)
def test_every_feature_constant_is_an_error_not_an_empty_selection(estimator, y):
    """With no column that varies there is nothing to rank: an error that says so, rather
    than an empty selection under a warning about bandwidths."""
    with pytest.raises(ValueError, match="Every feature of X is constant"):
        estimator.fit(np.full((12, 3), 7.0), y)


def test_without_numba_the_package_says_so_once_and_still_works():
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['numba'] = None\n"
        "import warnings; warnings.simplefilter('always')\n"
        "import numpy as np, pkex_select\n"
        "from pkex_select import _integrals\n"
        "assert not _integrals.NUMBA\n"
        "X = np.random.default_rng(0).normal(size=(40, 3))\n"
        "print(pkex_select.HSICShapleySelector(1).fit(X, X[:, 0]).get_support(True))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[0]"
    assert result.stderr.count("numba cannot be imported") == 1
    assert "3-4x slower" in result.stderr


def test_version_is_single_sourced():
    import subprocess
    import sys
    from importlib.metadata import version

    result = subprocess.run(
        [sys.executable, "-m", "pkex_select", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stdout.strip() == f"pkex-select {pkex_select.__version__}"
    assert version("pkex-select") == pkex_select.__version__


def test_date_columns_are_times():
    # NumPy has no common type for datetime and float columns: scikit-learn's checks failed
    # on such a frame. A date is read as days since 1970-01-01, in pandas (with or without a
    # time zone), polars and pyarrow alike; pandas output keeps the original column.
    rng = np.random.default_rng(4)
    frame = pd.DataFrame(
        {
            "when": pd.date_range("2021-01-01", periods=150, tz="Europe/Berlin"),
            "x": rng.normal(size=150),
        }
    )
    target = np.arange(150) / 40 + 0.2 * rng.normal(size=150)
    as_days = frame.assign(when=(frame["when"] - pd.Timestamp(0, tz="UTC")) / pd.Timedelta(days=1))
    selector = HSICShapleySelector(1, random_state=0).fit(frame, target)
    reference = HSICShapleySelector(1, random_state=0).fit(as_days, target)
    np.testing.assert_array_equal(selector.shapley_values_, reference.shapley_values_)
    assert list(selector.get_feature_names_out()) == ["when"]
    np.testing.assert_array_equal(selector.transform(frame), as_days[["when"]].to_numpy())
    kept = selector.set_output(transform="pandas").transform(frame)
    pd.testing.assert_frame_equal(kept, frame[["when"]])
    pl = pytest.importorskip("polars")
    from_polars = HSICShapleySelector(1, random_state=0).fit(pl.from_pandas(frame), target)
    np.testing.assert_allclose(
        from_polars.shapley_values_, reference.shapley_values_, rtol=1e-12, atol=1e-15
    )


def test_quantities_in_other_types_are_numbers():
    """Decimals, durations and periods are quantities (an RBF kernel), as dates are; large
    unsigned integers keep their differences; list columns are refused by name."""
    import decimal

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=60), "t": rng.choice(["x", "y"], 60)})
    target = 2 * frame["a"] + (frame["t"] == "x")
    frame["dec"] = [decimal.Decimal(f"{v:.3f}") for v in rng.normal(size=60)]
    frame["dur"] = pd.to_timedelta(rng.integers(0, 1000, 60), unit="s")
    frame["per"] = pd.period_range("2020-01", periods=60, freq="M")
    selector = HSICShapleySelector().fit(frame, target)
    assert selector.kernels_ == ["rbf", "delta", "rbf", "rbf", "rbf"]
    durations = pd.Series(pd.to_timedelta(target.to_numpy(), unit="D"))
    assert HSICShapleySelector().fit(frame[["a"]], durations).target_kernel_ == "rbf"
    order = np.argsort(np.argsort(frame["a"].to_numpy())).astype(np.uint64)
    large = pd.Series(order * np.uint64(3) + np.uint64(2**63))
    fitted = HSICShapleySelector(1).fit(frame[["a", "dec"]], large)
    assert fitted.target_kernel_ == "rbf" and fitted.get_support(indices=True).tolist() == [0]
    frame["lst"] = [[1.0, 2.0]] * 60
    with pytest.raises(ValueError, match="column 'lst' holds lists"):
        HSICShapleySelector().fit(frame, target)
    # A target of Decimals (read_sql's NUMERIC) is a quantity, not 60 class labels.
    decimals = pd.Series([decimal.Decimal(f"{v:.4f}") for v in target])
    from_decimals = HSICShapleySelector(1).fit(frame[["a", "dec"]], decimals)
    assert from_decimals.target_kernel_ == "rbf"
    np.testing.assert_allclose(
        from_decimals.shapley_values_,
        HSICShapleySelector(1).fit(frame[["a", "dec"]], decimals.astype(float)).shapley_values_,
        rtol=1e-12,
    )


def test_the_model_game_refuses_too_few_rows_to_fit_by_leave_one_out():
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(3, 2)), rng.normal(size=3)
    with pytest.raises(ValueError, match="needs at least 4 samples; got 3.*'baseline'"):
        HSICShapleySelector(1).fit(X, y)
    assert HSICShapleySelector(1, value_function="baseline").fit(X, y).shapley_values_.size == 2


def test_all_zero_values_warn_that_the_selection_is_arbitrary():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(40, 3))
    y = X[:, 0] + 0.1 * rng.normal(size=40)
    with pytest.warns(UserWarning, match="Every Shapley value is 0.*target_bandwidth"):
        selector = HSICShapleySelector(1, value_function="anova", target_bandwidth=1e200)
        selector.fit(X, y)
    assert not np.any(selector.shapley_values_)


def test_polars_output_keeps_numeric_columns_numeric():
    pl = pytest.importorskip("polars")
    rng = np.random.default_rng(1)
    frame = pl.DataFrame({"a": rng.normal(size=40), "t": rng.choice(["x", "y"], 40)})
    target = frame["a"].to_numpy()
    selector = HSICShapleySelector(2).set_output(transform="polars").fit(frame, target)
    assert selector.transform(frame).schema == frame.schema


def test_attribute_shift_takes_a_pandas_and_a_polars_frame():
    pl = pytest.importorskip("polars")
    from pkex_select import attribute_shift

    rng = np.random.default_rng(2)
    first = pd.DataFrame(rng.normal(size=(50, 3)), columns=["a", "b", "c"])
    second = pd.DataFrame(rng.normal(size=(50, 3)), columns=["a", "b", "c"])
    second["b"] += 2.0
    mixed = attribute_shift(first, pl.from_pandas(second), n_features_to_select=1)
    same = attribute_shift(first, second, n_features_to_select=1)
    np.testing.assert_array_equal(mixed.shapley_values_, same.shapley_values_)
    assert mixed.get_feature_names_out().tolist() == ["b"]


def test_tags_declare_text_and_category_columns():
    from pkex_select import HSICShapleySelector, MMDShapleyAttributor

    for estimator in (HSICShapleySelector(), MMDShapleyAttributor()):
        tags = estimator.__sklearn_tags__().input_tags
        assert tags.string and tags.categorical and not tags.sparse and not tags.allow_nan


def test_a_warning_deep_in_the_fit_points_at_the_callers_line():
    """The identifier warning arises under joblib's cache, several calls into the fit; it
    names the caller's file, not the package's."""
    rows = np.random.default_rng(0).standard_normal(120)
    frame = pd.DataFrame({"a": rows, "id": np.arange(120).astype(str)})
    with pytest.warns(pkex_select.IdentifierColumnWarning) as record:
        HSICShapleySelector(1).fit(frame, rows)
    named = {w.filename for w in record if w.category is pkex_select.IdentifierColumnWarning}
    assert named == {__file__}
