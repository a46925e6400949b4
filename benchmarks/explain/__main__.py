"""Explainer benchmark: exact local explanations of an RBF SVR against its peers.

    python -m benchmarks.explain [--dims 10 50 100 200 500] [--budget 120] [--out DIR]
                                 [--methods pkex pkex-exact shapiq recursion kernelshap]

An RBF ``SVR`` (gamma = 1 / (2 d), epsilon = 0.01, so nearly all of the 500 training points
are support vectors) is explained for 1 and for 100 test points by

- ``pkex``: this library's ``ProductKernelExplainer`` (one thread; nodes from the error
  bound), and ``pkex-exact`` with ``tol=0`` (ceil(d / 2) nodes, the engine before the bound);
- ``shapiq``: shapiq's ``ProductKernelExplainer`` (the published algorithm as packaged);
- ``recursion``: the published prefix/suffix recursion (tests/references.py) per point;
- ``kernelshap``: shap's ``KernelExplainer`` with its default budget (2d + 2048 coalitions)
  and no l1 pre-selection, estimating the same removal game (coalitions coded as 0/1
  inputs, background all zeros).

Slow methods run points until ``--budget`` seconds are spent (at least one point); their
100-point time is then the per-point time times 100, and ``points_timed`` says so. Every
method's values are compared with the exact ones (``max_abs_diff``; for kernelshap also the
error relative to sum |phi|). Writes ``results/explain.csv`` and ``results/explain.md``.
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.svm import SVR

from benchmarks._measure import markdown_table, progress, write_results
from pkex_select import ProductKernelExplainer
from pkex_select._engine import DEFAULT_TOL
from pkex_select.kernels import factor_tensor
from tests.references import recursion_shapley

DIMS = (10, 50, 100, 200, 500)
METHODS = ("pkex", "pkex-exact", "shapiq", "recursion", "kernelshap")
RESULTS = Path(__file__).parent / "results"


def make_model(n_features, seed):
    rng = np.random.default_rng([seed, n_features])
    X = rng.normal(size=(600, n_features))
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=600)
    model = SVR(gamma=1.0 / (2 * n_features), epsilon=0.01, C=10.0).fit(X[:500], y[:500])
    return model, X[500:]


def shapiq_values(model):
    from shapiq.explainer.product_kernel import ProductKernelExplainer as ShapiqExplainer

    explainer = ShapiqExplainer(model)
    d = model.n_features_in_

    def explain(x):
        values = explainer.explain(x)
        return np.array([values[(j,)] for j in range(d)])

    return explain


def recursion_values(model):
    gamma = np.full(model.n_features_in_, model._gamma)

    def explain(x):
        Z = factor_tensor(x[None, :], model.support_vectors_, "rbf", gamma)[0]
        return recursion_shapley(Z, model.dual_coef_[0])

    return explain


def kernelshap_values(model):
    import shap

    exact = ProductKernelExplainer(model)
    d = model.n_features_in_

    def explain(x):
        def game(masks):
            return exact.coalition_value(x[None, :], masks.astype(bool))[0]

        estimator = shap.KernelExplainer(game, np.zeros((1, d)))
        # l1_reg=False: shap's default keeps only some features, a biased estimate.
        return estimator.shap_values(np.ones((1, d)), l1_reg=False, silent=True)[0]

    return explain


def time_points(explain, points, budget):
    """Explain points one by one until the budget is spent; per-point seconds and values."""
    values, start = [], time.perf_counter()
    for x in points:
        values.append(explain(x))
        if time.perf_counter() - start > budget:
            break
    return (time.perf_counter() - start) / len(values), np.array(values)


def run(dims, budget, seed, methods=METHODS):
    rows = []
    jobs = [(d, m) for d in dims for m in ["pkex"] + [m for m in methods if m != "pkex"]]
    exact = {}
    for d, method in progress(jobs, desc="explain benchmark", file=sys.stderr):
        model, X_test = make_model(d, seed)
        if method in ("pkex", "pkex-exact"):
            explainer = ProductKernelExplainer(model, n_jobs=1, tol=0 if "exact" in method
                                               else DEFAULT_TOL)
            explainer.explain(X_test[:1])  # compile outside the timing
            start = time.perf_counter()
            one = explainer.explain(X_test[:1]).values
            t_one = time.perf_counter() - start
            start = time.perf_counter()
            values = explainer.explain(X_test[:100]).values
            t_hundred = time.perf_counter() - start
            exact.setdefault(d, values)
            rows.append(_row(d, method, model, t_one, t_hundred, 100, values, exact[d]))
            assert np.allclose(one, values[:1], rtol=0, atol=1e-13)
            continue
        explain = {"shapiq": shapiq_values, "recursion": recursion_values,
                   "kernelshap": kernelshap_values}[method](model)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            per_point, values = time_points(explain, X_test[:100], budget)
        rows.append(_row(d, method, model, per_point, 100 * per_point, len(values),
                         values, exact[d][: len(values)]))
    return rows


def _row(d, method, model, t_one, t_hundred, points_timed, values, exact):
    scale = np.abs(exact).sum(axis=1)
    return {
        "d": d,
        "method": method,
        "n_support_vectors": model.support_vectors_.shape[0],
        "seconds_1_point": t_one,
        "seconds_100_points": t_hundred,
        "points_timed": points_timed,
        "max_abs_diff": float(np.abs(values - exact).max()),
        "relative_error": float(np.mean(np.abs(values - exact).sum(axis=1) / scale)),
    }


def summary(rows):
    by = {(r["d"], r["method"]): r for r in rows}
    table = []
    for r in rows:
        pkex = by[(r["d"], "pkex")]
        table.append([
            r["d"], r["method"], r["n_support_vectors"], f"{r['seconds_1_point']:.4f}",
            f"{r['seconds_100_points']:.3f}" + ("" if r["points_timed"] == 100 else
                                                f" (from {r['points_timed']})"),
            "1x" if r["method"] == "pkex" else
            f"**{r['seconds_100_points'] / pkex['seconds_100_points']:.0f}x**",
            f"{r['max_abs_diff']:.1e}", f"{r['relative_error']:.1e}",
        ])
    header = ["d", "method", "SVs", "1 point s", "100 points s", "slower than pkex",
              "max abs diff vs exact", "relative error"]
    return markdown_table(header, table)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=list(DIMS))
    parser.add_argument("--budget", type=float, default=60.0,
                        help="seconds per slow method and d before extrapolating")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    args = parser.parse_args(argv)
    rows = run(args.dims, args.budget, args.seed, args.methods)
    write_results(
        args.out, "explain", rows, "Explainer benchmark",
        f"`python -m benchmarks.explain` (RBF SVR, 500 training points, seed {args.seed}, "
        f"budget {args.budget:.0f} s per slow method). Times for 100 points marked 'from k' "
        "are k measured points scaled to 100.",
        summary(rows),
    )

if __name__ == "__main__":
    main()
