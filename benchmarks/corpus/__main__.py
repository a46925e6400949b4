"""A record of what the package returns, to check a refactoring changes none of it.

    python -m benchmarks.corpus --record FILE   # before the change
    python -m benchmarks.corpus --check FILE    # after it: every entry bit for bit

The corpus: every selector question (k, threshold, alpha, fdr) and game on regression,
classification and mixed-type data; the attributor with and without tests; the explainer on
an SVR and a Gaussian process; the command line's output on CSVs of both tasks. Values are
compared with ``np.array_equal`` (bit for bit), text character for character. The record
holds floats exactly, so it belongs to one machine and library stack: record and check on
the same one.
"""

import argparse
import contextlib
import io
import pickle
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import make_classification, make_friedman1
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF
from sklearn.svm import SVR

from pkex_select import HSICShapleySelector, MMDShapleyAttributor, ProductKernelExplainer
from pkex_select.__main__ import main as cli

FITTED = (
    "shapley_values_",
    "shares_",
    "ranking_",
    "pvalues_",
    "adjusted_pvalues_",
    "pvalue_",
    "bandwidths_",
    "e_values_",
    "knockoff_statistics_",
    "interaction_values_",
    "hsic_",
    "mmd_",
    "value_function_",
)


def _data():
    X_reg, y_reg = make_friedman1(n_samples=300, n_features=8, random_state=0)
    X_cls, y_cls = make_classification(
        n_samples=300, n_features=8, n_informative=3, n_redundant=0, random_state=1
    )
    rng = np.random.default_rng(2)
    mixed = pd.DataFrame(X_reg[:, :5], columns=[f"x{j}" for j in range(5)])
    mixed["colour"] = rng.choice(["red", "green", "blue"], len(mixed))
    y_mixed = y_reg + (mixed["colour"] == "red")
    return {"regression": (X_reg, y_reg), "classes": (X_cls, y_cls), "mixed": (mixed, y_mixed)}


SELECTORS = {
    "k": {"n_features_to_select": 3},
    "fraction": {},
    "threshold": {"threshold": "mean"},
    "alpha": {"alpha": 0.05},
    "permutations": {"n_permutations": 199, "n_features_to_select": 3},
    "fdr": {"fdr": 0.2, "n_knockoffs": 2},
    "baseline": {"value_function": "baseline"},
    "anova": {"value_function": "anova"},
    "model+anova": {"value_function": "model+anova"},
    "interactions": {"interactions": "STII"},
    "median": {"bandwidth": "median"},
}


def _fitted(estimator):
    record = {a: getattr(estimator, a) for a in FITTED if hasattr(estimator, a)}
    record["support"] = estimator.get_support()
    return record


def collect():
    corpus = {}
    data = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, (X, y) in data.items():
            for case, params in SELECTORS.items():
                if name == "mixed" and case == "fdr":
                    continue  # knockoffs refuse categorical columns
                selector = HSICShapleySelector(random_state=0, **params)
                corpus[f"hsic/{name}/{case}"] = _fitted(selector.fit(X, y))
        X, _ = data["regression"]
        shifted = X + np.r_[0.4, 0, 0, 0.4, 0, 0, 0, 0]
        for case, params in {"k": {"n_features_to_select": 2}, "alpha": {"alpha": 0.05}}.items():
            attributor = MMDShapleyAttributor(random_state=0, **params)
            samples = np.vstack([X[:150], shifted[150:]])
            labels = np.repeat([0, 1], 150)
            corpus[f"mmd/{case}"] = _fitted(attributor.fit(samples, labels))
        X, y = data["regression"]
        svr = SVR(gamma=0.5).fit(X, y)
        corpus["explain/svr"] = ProductKernelExplainer(svr).explain(X[:20]).values
        gp = GaussianProcessRegressor(RBF(np.ones(8))).fit(X[:100], y[:100])
        explanation = ProductKernelExplainer(
            gp, value_function="observational", background=X[:50]
        ).explain(X[:5], return_covariance=True)
        corpus["explain/gp"] = (explanation.values, explanation.covariance)
    corpus.update(_cli_outputs(data))
    return corpus


# The command line's answers, and its refusals (their messages included).
CLI_CASES = (
    [],
    ["--k", "3"],
    ["--fdr", "0.2"],
    ["--permutations", "0"],
    ["--json"],
    ["--alpha", "0.1", "--permutations", "99"],
    ["--k", "3", "--alpha", "0.05"],
    ["--alpha", "0.05", "--permutations", "0"],
    ["--alpha", "0.05", "--permutations", "10"],
    ["--k", "100"],
    ["--value-function", "model", "--alpha", "0.05"],
    ["--value-function", "baseline", "--k", "2"],
)


def _cli_outputs(data):
    outputs = {}
    # A fixed folder: the tables the command line prints name their file.
    folder = Path(tempfile.gettempdir()) / "pkex-corpus"
    folder.mkdir(exist_ok=True)
    for name in ("regression", "classes"):
        X, y = data[name]
        frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])]).assign(y=y)
        path = folder / f"{name}.csv"
        frame.to_csv(path, index=False)
        for flags in CLI_CASES:
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = cli([*flags, "rank", str(path), "--target", "y"])
                except SystemExit as exit:  # argparse's refusals
                    code = exit.code
            outputs[f"cli/{name}/{' '.join(flags)}"] = (code, out.getvalue(), err.getvalue())
    return outputs


def _same(a, b):
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, z) for x, z in zip(a, b))
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    return a == b


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--record", type=Path)
    action.add_argument("--check", type=Path)
    args = parser.parse_args(argv)
    corpus = collect()
    if args.record:
        args.record.write_bytes(pickle.dumps(corpus))
        print(f"{len(corpus)} entries recorded in {args.record}")
        return 0
    recorded = pickle.loads(args.check.read_bytes())
    keys = recorded.keys() | corpus.keys()
    changed = [k for k in keys if not _same(recorded.get(k), corpus.get(k))]
    for key in sorted(changed):
        print(f"changed: {key}")
    print(f"{len(corpus) - len(changed)} of {len(recorded)} entries bit for bit the same")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
