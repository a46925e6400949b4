"""Hardening round 5: what a new user or an adversary passes, and what must come back.

Each case is a call and what it must do: work (and return finite values of the right
shape), or refuse with a ValueError, TypeError or NotFittedError whose message is a sentence,
never a NumPy or pandas internal. The command line must exit 0, or 2 with
"pkex-select: error:" and no traceback.
"""

import gzip
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import sparse
from sklearn.exceptions import NotFittedError

from pkex_select import (
    HSICShapleySelector,
    MMDShapleyAttributor,
    ProductKernelExplainer,
    attribute_shift,
)

rng = np.random.default_rng(11)
X = rng.normal(size=(60, 4))
y = X[:, 0] + 0.5 * np.sin(2 * X[:, 1]) + 0.1 * rng.normal(size=60)
labels = (X[:, 0] > 0).astype(int)
P = pd.DataFrame(rng.normal(size=(50, 3)), columns=["a", "b", "c"])
Q = pd.DataFrame(rng.normal(size=(50, 3)) + [0, 1.0, 0], columns=["a", "b", "c"])

OK, ERROR = "ok", "error"
# Words of internals that a message must not show.
INTERNALS = ("inhomogeneous", "not supported between", "could not convert", "object arrays")


def _check_outcome(expected, call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if expected == OK:
            result = call()
            if result is not None:
                assert np.all(np.isfinite(np.asarray(result, dtype=float)))
            return
        with pytest.raises((ValueError, TypeError, NotFittedError)) as raised:
            call()
    message = str(raised.value)
    assert len(message) > 25, message
    assert not any(word in message for word in INTERNALS), message


def _values(estimator, data=X, target=y):
    return estimator.fit(data, target).shapley_values_


# ----------------------------------------------------------------- parameters


class _NoCache:
    """Neither a path nor an object with a ``cache`` method; its repr names the test the
    same in every process (pytest-xdist's workers must collect the same ids)."""

    def __repr__(self):
        return "_NoCache()"


PARAMETERS = {
    "n_features_to_select": [
        (0, ERROR),
        (-1, ERROR),
        (1.5, ERROR),
        (0.0, ERROR),
        ("two", ERROR),
        (True, ERROR),
        (10**9, OK),
        (1, OK),
        (0.5, OK),
        (np.int64(2), OK),
    ],
    "threshold": [
        ("x", ERROR),
        (np.nan, ERROR),
        ("2*max", ERROR),
        ("nan*mean", ERROR),
        (0.0, OK),
        (-np.inf, OK),
        ("mean", OK),
        ("1.5*median", OK),
    ],
    "alpha": [(0, ERROR), (1, ERROR), (-0.1, ERROR), (2, ERROR), ("0.05", ERROR), (0.2, OK)],
    "fdr": [(0, ERROR), (1, ERROR), (-0.5, ERROR), ("q", ERROR), (0.5, OK)],
    "n_permutations": [(-1, ERROR), (1.5, ERROR), ("9", ERROR), (0, OK), (19, OK)],
    "scales": [
        ([], ERROR),
        ([0], ERROR),
        ([-1], ERROR),
        ([np.nan], ERROR),
        ("wide", ERROR),
        ([1, 2], ERROR),  # the model game fits one kernel
        ([[1]], ERROR),
        ([2.0], OK),
    ],
    "bandwidth": [
        (0, ERROR),
        (-1.0, ERROR),
        ("wide", ERROR),
        (np.inf, ERROR),
        (1e-300, OK),  # warns
        (1e300, OK),  # warns
        (0.5, OK),
        ("median", OK),
        ("scott", OK),
        ("alignment", OK),
    ],
    "kernel": [("poly", ERROR), ("RBF", ERROR), (None, ERROR), ("laplacian", OK), ("cauchy", OK)],
    "value_function": [
        ("shap", ERROR),
        (None, ERROR),
        ("model", OK),
        ("model+anova", OK),
        ("anova", OK),
        ("baseline", OK),
        ("observational", OK),
    ],
    "categorical_features": [
        ([7], ERROR),
        (["zz"], ERROR),
        ([0.5], ERROR),
        ("all", ERROR),
        ([True, False], ERROR),
        ([3], OK),
        (np.array([False, False, False, True]), OK),
    ],
    "n_knockoffs": [(0, ERROR), (True, ERROR), (2.5, ERROR), (-2, ERROR)],
    "random_state": [("seed", ERROR), (-1, ERROR), (1.5, ERROR), (0, OK), (2**31, OK)],
    "n_jobs": [(1.5, ERROR), ("all", ERROR), (-1, OK), (2, OK), (1, OK)],
    "memory": [(3, ERROR), (_NoCache(), ERROR)],
    "verbose": [(-1, ERROR), ("loud", ERROR), (0, OK)],
    "estimate": [("exact", ERROR), (None, ERROR), ("block", OK), ("unbiased", OK)],
    "block_size": [(1, ERROR), (0, ERROR), (2.5, ERROR), (10**6, OK), (10, OK)],
    "n_repetitions": [(0, ERROR), ("many", ERROR), (3, OK)],
    "anova_weight": [(0, ERROR), (2, ERROR), (-1, ERROR), (0.5, OK)],
    "interactions": [("SV", ERROR), ("pairs", ERROR), ("SII", OK), ("STII", OK)],
    "correction": [("bonferroni", ERROR), ("holm", OK), ("fdr_bh", OK)],
    # y is continuous: its 60 values as 60 classes say nothing.
    "target_kernel": [("poly", ERROR), ("delta", ERROR), ("laplacian", OK)],
}
PARAMETER_CASES = [
    (name, value, expected) for name, cases in PARAMETERS.items() for value, expected in cases
]


@pytest.mark.parametrize(
    "name, value, expected", PARAMETER_CASES, ids=[f"{n}={v!r}" for n, v, _ in PARAMETER_CASES]
)
def test_selector_parameters(name, value, expected):
    options = {name: value}
    if name in ("interactions",):
        options["value_function"] = "baseline"
    if name in ("correction",):
        options["n_permutations"] = 19
    _check_outcome(expected, lambda: _values(HSICShapleySelector(**options)))


@pytest.mark.parametrize(
    "name, value, expected",
    [c for c in PARAMETER_CASES if c[0] not in ("interactions", "target_kernel")],
    ids=[f"{n}={v!r}" for n, v, _ in PARAMETER_CASES if n not in ("interactions", "target_kernel")],
)
def test_attributor_parameters(name, value, expected):
    if name == "scales" and value == [1, 2]:
        expected = OK  # the attributor ranks by the ANOVA game, which takes several scales
    _check_outcome(expected, lambda: _values(MMDShapleyAttributor(**{name: value}), X, labels))


@pytest.mark.parametrize(
    "groups, expected",
    [
        ([None, 0, 1, 2], ERROR),
        ([[0, 1], [2, 3]], ERROR),
        ([[0], [1, 2, 3]], ERROR),
        ([0, 1], ERROR),
        ([0.5, 1, 2, 3], ERROR),
        ([True, False, True, False], ERROR),
        ("groups", ERROR),
        (["a", "a", "b", "c"], OK),
        ([0, 0, 1, 1], OK),
        ("auto", OK),
    ],
)
def test_knockoff_groups(groups, expected):
    selector = HSICShapleySelector(fdr=0.5, knockoff_groups=groups, random_state=0)
    _check_outcome(expected, lambda: _values(selector))


# ---------------------------------------------------------------------- data
def _with(column, values):
    frame = pd.DataFrame(X, columns=list("abcd"))
    frame[column] = values
    return frame


DATA = {
    "NaN in X": (np.where(np.arange(60)[:, None] == 3, np.nan, X), y, ERROR),
    "inf in X": (np.where(np.arange(60)[:, None] == 3, np.inf, X), y, ERROR),
    "NaN in y": (X, np.where(np.arange(60) == 3, np.nan, y), ERROR),
    "inf in y": (X, np.where(np.arange(60) == 3, np.inf, y), ERROR),
    "strings in an array": (X.astype(str), y, OK),  # numbers written as text
    "words in an array": (np.full((60, 4), "w"), y, ERROR),
    "sparse X": (sparse.csr_matrix(X), y, ERROR),
    "one row": (X[:1], y[:1], ERROR),
    "two rows": (X[:2], y[:2], ERROR),
    "four rows": (X[:4], y[:4], OK),
    "constant X": (np.ones((60, 4)), y, ERROR),
    "one constant column": (np.column_stack([X[:, :3], np.ones(60)]), y, OK),
    "constant y": (X, np.ones(60), ERROR),
    "single class": (X, np.zeros(60, dtype=int), ERROR),
    "string labels": (X, np.where(labels, "yes", "no"), OK),
    "three string classes": (X, np.array(["a", "b", "c"])[np.arange(60) % 3], OK),
    "2-D y, labels and a quantity": (X, np.column_stack([y, labels]), ERROR),
    "2-D y": (X, np.column_stack([y, X[:, 1] ** 2]), OK),
    "2-D y, one constant": (X, np.column_stack([y, np.ones(60)]), OK),
    "y too short": (X, y[:50], ERROR),
    "1-D X": (X[:, 0], y, ERROR),
    "3-D X": (X[:, :, None], y, ERROR),
    "no columns": (X[:, :0], y, ERROR),
    "huge values": (X * 1e300, y, OK),
    "tiny values": (X * 1e-300, y, OK),
    "duplicate columns": (np.column_stack([X, X[:, 0]]), y, OK),
    "boolean X": (X > 0, y, OK),
    "integer X": (np.round(X * 3).astype(int), y, OK),
    "large uint64 y": (X, (np.arange(60, dtype=np.uint64) + 2**63), OK),
    "complex X": (X + 1j, y, ERROR),
    "object mix column": (_with("d", ["x"] * 59 + [1.0]), y, OK),
    "text column": (_with("d", np.where(labels, "on", "off")), y, OK),
    "category dtype": (_with("d", pd.Categorical(np.where(labels, "on", "off"))), y, OK),
    "datetime column": (_with("d", pd.date_range("2020-01-01", periods=60)), y, OK),
    "timedelta column": (_with("d", pd.to_timedelta(np.arange(60), unit="D")), y, OK),
    "id column": (_with("d", [f"id{i}" for i in range(60)]), y, OK),  # warns
    "duplicate names": (pd.DataFrame(X, columns=list("aabc")), y, ERROR),
    "integer names": (pd.DataFrame(X, columns=[0, 1, 2, 3]), y, OK),
    "NaN in a text column": (_with("d", ["x", None] * 30), y, ERROR),
    "y as a frame": (X, pd.DataFrame({"t": y}), OK),
    "y as a list": (X, list(y), OK),
    "X as lists": (X.tolist(), y, OK),
    "y with None": (X, [None] + list(y[1:]), ERROR),
    "y of dates": (X, pd.date_range("2020-01-01", periods=60), OK),
}


@pytest.mark.parametrize("case", list(DATA))
@pytest.mark.parametrize("game", ["auto", "anova"])
def test_data(case, game):
    data, target, expected = DATA[case]
    _check_outcome(
        expected, lambda: _values(HSICShapleySelector(2, value_function=game), data, target)
    )


def test_polars_and_arrow_frames():
    pl = pytest.importorskip("polars")
    pa = pytest.importorskip("pyarrow")
    frame = pd.DataFrame(X, columns=list("abcd")).assign(t=np.where(labels, "p", "q"))
    for data in (pl.from_pandas(frame), pa.Table.from_pandas(frame)):
        selector = HSICShapleySelector(2).set_output(transform="pandas").fit(data, y)
        assert selector.transform(data).shape == (60, 2)


# -------------------------------------------------------------- attribute_shift
SHIFTS = {
    "same frames": (P, Q, OK),
    "other column order": (P, Q[["b", "a", "c"]], ERROR),
    "other columns": (P, Q.rename(columns={"c": "z"}), ERROR),
    "empty second": (P, Q.iloc[:0], ERROR),
    "one row each": (P.iloc[:1], Q.iloc[:1], ERROR),
    "two rows each": (P.iloc[:2], Q.iloc[:2], OK),
    "identical samples": (P, P.copy(), OK),  # warns, selects nothing
    "numbers and text": (P, Q.assign(b=Q.b.map("{:.3f}".format)), ERROR),
    "text both": (P.assign(b=P.b.map("{:.1f}".format)), Q.assign(b=Q.b.map("{:.1f}".format)), OK),
    "array and frame": (P.to_numpy(), Q, ERROR),
    "arrays": (P.to_numpy(), Q.to_numpy(), OK),
    "arrays of other widths": (P.to_numpy(), Q.to_numpy()[:, :2], ERROR),
    "NaN in one": (P, Q.assign(a=np.nan), ERROR),
    "constant column": (P.assign(c=1.0), Q.assign(c=1.0), OK),
    "1-D arrays": (P.a.to_numpy(), Q.a.to_numpy(), ERROR),
}


@pytest.mark.parametrize("case", list(SHIFTS))
def test_attribute_shift(case):
    first, second, expected = SHIFTS[case]
    _check_outcome(expected, lambda: attribute_shift(first, second).shapley_values_)


def test_identical_samples_select_nothing_and_a_shift_is_found():
    with pytest.warns(UserWarning, match="Only 0 of"):
        assert attribute_shift(P, P.copy()).get_support().sum() == 0
    found = attribute_shift(P, Q, n_features_to_select=1).get_feature_names_out()
    assert list(found) == ["b"]


# ------------------------------------------------------------------ explainer
def _models():
    from sklearn.decomposition import PCA
    from sklearn.gaussian_process import GaussianProcessClassifier, GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC, SVR

    three = np.arange(60) % 3
    return {
        "unfitted SVR": (lambda: SVR(), ERROR),
        "polynomial SVC": (lambda: SVC(kernel="poly").fit(X, labels), ERROR),
        "linear kernel ridge": (lambda: KernelRidge(kernel="linear").fit(X, y), ERROR),
        "Matern GP": (lambda: GaussianProcessRegressor(Matern()).fit(X, y), ERROR),
        "PCA pipeline": (lambda: make_pipeline(PCA(2), SVR()).fit(X, y), ERROR),
        "three-class GPC": (
            lambda: GaussianProcessClassifier(RBF()).fit(X[:, :2], three),
            ERROR,
        ),
        "scaled SVR": (lambda: make_pipeline(StandardScaler(), SVR()).fit(X, y), OK),
        "GP": (lambda: GaussianProcessRegressor(ConstantKernel() * RBF()).fit(X, y), OK),
        "three-class SVC": (lambda: SVC().fit(X, three), OK),
    }


@pytest.mark.parametrize("name", list(_models()))
def test_explainer_models(name):
    make, expected = _models()[name]
    _check_outcome(expected, lambda: ProductKernelExplainer(make()).explain(X[:3]).values)


@pytest.mark.parametrize(
    "what, expected",
    [
        ("NaN row", ERROR),
        ("wrong width", ERROR),
        ("wrong names", ERROR),
        ("no rows", ERROR),
        ("index", ERROR),
        ("order", ERROR),
        ("covariance of the removal game", ERROR),
        ("covariance of SII", ERROR),
        ("covariance of an SVR", ERROR),
        ("background of the wrong width", ERROR),
        ("covariance", OK),
        ("frame", OK),
    ],
)
def test_explainer_inputs(what, expected):
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    from sklearn.svm import SVR

    frame = pd.DataFrame(X, columns=list("abcd"))
    gp = GaussianProcessRegressor(ConstantKernel() * RBF(), alpha=0.01).fit(frame, y)
    observational = ProductKernelExplainer(gp, value_function="observational", background=frame)
    calls = {
        "NaN row": lambda: observational.explain(frame.iloc[:2].assign(a=np.nan)).values,
        "wrong width": lambda: observational.explain(X[:2, :3]).values,
        "wrong names": lambda: observational.explain(frame.iloc[:2].set_axis(list("wxyz"), axis=1)),
        "no rows": lambda: observational.explain(frame.iloc[:0]).values,
        "index": lambda: observational.explain(frame.iloc[:2], index="XYZ").values,
        "order": lambda: observational.explain(frame.iloc[:2], index="SII", max_order=3).values,
        "covariance of the removal game": lambda: ProductKernelExplainer(gp).explain(
            frame.iloc[:2], return_covariance=True
        ),
        "covariance of SII": lambda: observational.explain(
            frame.iloc[:2], index="SII", max_order=2, return_covariance=True
        ),
        "covariance of an SVR": lambda: ProductKernelExplainer(
            SVR().fit(X, y), value_function="observational", background=X
        ).explain(X[:2], return_covariance=True),
        "background of the wrong width": lambda: ProductKernelExplainer(
            gp, value_function="observational", background=X[:, :2]
        ),
        "covariance": lambda: (
            observational.explain(frame.iloc[:2], return_covariance=True).covariance
        ),
        "frame": lambda: observational.explain(frame.iloc[:2]).values,
    }
    _check_outcome(expected, calls[what])


# ------------------------------------------------------------- command line
def _cli(tmp_path, capsys, name, content, *flags):
    from pkex_select.__main__ import main

    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    try:
        status = main(["rank", str(path), *flags])
    except SystemExit as exit_:  # argparse's own refusals
        status = exit_.code
    out, err = capsys.readouterr()
    return status, out, err


CSV = "a,b,c,y\n" + "\n".join(
    f"{a:.3f},{b:.3f},{c:.3f},{2 * a + 0.1 * c:.3f}" for a, b, c in rng.normal(size=(60, 3))
)
CLI = {
    "no such file": ("missing.csv", None, [], 2),
    "empty file": ("empty.csv", "", [], 2),
    "header only": ("head.csv", "a,b,y\n", [], 2),
    "no target": ("f.csv", CSV, ["--target", "z"], 2),
    "target only": ("t.csv", "y\n1\n2\n3\n4\n5\n", [], 2),
    "constant target": ("c.csv", "a,y\n" + "\n".join(f"{i},1" for i in range(20)), [], 2),
    # Dropped with a note (tests/test_cli.py::test_an_empty_column_is_dropped_with_a_note).
    "column all missing": (
        "m.csv",
        "a,b,y\n" + "\n".join(f"{i},,{i % 3}" for i in range(20)),
        [],
        0,
    ),
    "--k 0": ("f.csv", CSV, ["--k", "0"], 2),
    "--k 9": ("f.csv", CSV, ["--k", "9"], 0),
    "--alpha 2": ("f.csv", CSV, ["--alpha", "2"], 2),
    "--fdr 0": ("f.csv", CSV, ["--fdr", "0"], 2),
    "--permutations -1": ("f.csv", CSV, ["--permutations", "-1"], 2),
    "--k and --alpha": ("f.csv", CSV, ["--k", "1", "--alpha", "0.05"], 2),
    "--plot in a missing folder": ("f.csv", CSV, ["--k", "1", "--plot", "/nonexistent/x.png"], 2),
    "--plot of an unknown type": ("f.csv", CSV, ["--k", "1", "--plot", "x.xyz"], 2),
    "--sep ab": ("f.csv", CSV, ["--sep", "ab"], 2),
    "not gzip": ("f.csv.gz", CSV, ["--k", "1"], 2),
    "gzip": ("f.csv.gz", gzip.compress(CSV.encode()), ["--k", "1"], 0),
    "empty zip": ("f.zip", b"PK\x05\x06" + b"\x00" * 18, ["--k", "1"], 2),
    "binary file": ("f.csv", bytes(range(256)) * 4, [], 2),
    "semicolons": ("s.csv", CSV.replace(",", ";"), ["--k", "1"], 0),
    "--k 1": ("f.csv", CSV, ["--k", "1"], 0),
    "--alpha 0.05": ("f.csv", CSV, ["--alpha", "0.05"], 0),
    "--value-function model+anova": (
        "f.csv",
        CSV,
        ["--k", "2", "--value-function", "model+anova"],
        0,
    ),
    "--json": ("f.csv", CSV, ["--k", "1", "--json"], 0),
    "--task classification on floats": ("f.csv", CSV, ["--task", "classification"], 2),
}


@pytest.mark.parametrize("case", list(CLI))
def test_command_line(case, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    name, content, flags, expected = CLI[case]
    if "--target" not in flags:
        flags = ["--target", "y", *flags]
    status, _, err = _cli(tmp_path, capsys, name, content, *flags)
    assert status == expected, err
    assert "Traceback" not in err
    if expected == 2:
        assert "error" in err and len(err) > 30, err
