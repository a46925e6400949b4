"""Explainer benchmark: exact local explanations of an RBF SVR against its peers.

    python -m benchmarks.explain [--dims 10 50 100 200 500] [--budget 120] [--out DIR]
                                 [--methods pkex pkex-exact shapiq recursion kernelshap]
                                 [--kernel half-scale|scale|narrow] [--max-slow-d 1000]

An RBF ``SVR`` (epsilon = 0.01, so nearly all of the 500 training points are support
vectors) is explained for 1 and for 100 test points. ``--kernel`` sets its gamma:
``half-scale`` 1 / (2 d) (the default), ``scale`` scikit-learn's ``gamma="scale"``
(1 / (d var X), about 1 / d here) and ``narrow`` 1 / 8 per feature (S = sum_j |1 - z_j| grows
like d / 4, so every pair needs the exact ceil(d / 2) nodes: the case where the error bound
must cost nothing). ``nodes`` is the largest node count any pair of the explained points
needs under the bound. Methods:

- ``pkex``: this library's ``ProductKernelExplainer`` (one thread; nodes from the error
  bound), and ``pkex-exact`` with ``tol=0`` (ceil(d / 2) nodes, the engine before the bound);
- ``shapiq``: shapiq's ``ProductKernelExplainer`` (the published algorithm as packaged);
- ``recursion``: the published prefix/suffix recursion (tests/references.py) per point;
- ``kernelshap``: shap's ``KernelExplainer`` with its default budget (2d + 2048 coalitions)
  and no l1 pre-selection, estimating the same removal game (coalitions coded as 0/1
  inputs, background all zeros).

Slow methods (and ``pkex-exact`` from d = 2000) run points until ``--budget`` seconds are
spent (at least one point); their 100-point time is then the per-point time times 100, and
``points_timed`` says so. shapiq and the recursion run up to ``--max-slow-d`` features: one
point of shapiq takes minutes at d = 1000, and the recursion's tables overflow from d of
about 1030 (its values are then inf or NaN). Every
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
from pkex_select._quadrature import DEFAULT_TOL, node_counts
from pkex_select.kernels import factor_tensor
from tests.references import recursion_shapley

DIMS = (10, 50, 100, 200, 500)
METHODS = ("pkex", "pkex-exact", "shapiq", "recursion", "kernelshap")
RESULTS = Path(__file__).parent / "results"


KERNELS = {"half-scale": lambda d: 1.0 / (2 * d), "scale": "scale", "narrow": lambda d: 0.125}


def make_model(n_features, seed, kernel="half-scale"):
    rng = np.random.default_rng([seed, n_features])
    X = rng.normal(size=(600, n_features))
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=600)
    gamma = KERNELS[kernel]
    gamma = gamma if isinstance(gamma, str) else gamma(n_features)
    model = SVR(gamma=gamma, epsilon=0.01, C=10.0).fit(X[:500], y[:500])
    return model, X[500:]


def largest_node_count(model, points):
    """The most quadrature nodes any pair of these points needs under the error bound."""
    d = model.n_features_in_
    Z = factor_tensor(points, model.support_vectors_, "rbf", np.full(d, model._gamma))
    return int(node_counts(np.abs(1.0 - Z).sum(axis=2).max(keepdims=True), d).max())


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
    # The recursion keeps two d x d tables per pair: pairs in chunks of about 1 GiB.
    chunk = max(1, 2**30 // (16 * model.n_features_in_**2))

    def explain(x):
        Z = factor_tensor(x[None, :], model.support_vectors_, "rbf", gamma)[0]
        weights = model.dual_coef_[0]
        return sum(
            recursion_shapley(Z[s : s + chunk], weights[s : s + chunk])
            for s in range(0, len(Z), chunk)
        )

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


def run(dims, budget, seed, methods=METHODS, kernel="half-scale", max_slow_d=1000):
    rows = []
    jobs = [
        (d, m)
        for d in dims
        for m in ["pkex"] + [m for m in methods if m != "pkex"]
        if m in ("pkex", "pkex-exact", "kernelshap") or d <= max_slow_d
    ]
    exact = {}
    for d, method in progress(jobs, desc="explain benchmark", file=sys.stderr):
        model, X_test = make_model(d, seed, kernel)  # seeded: the same model for every method
        nodes = largest_node_count(model, X_test[:100])
        if method == "pkex" or (method == "pkex-exact" and d < 2000):
            explainer = ProductKernelExplainer(
                model, n_jobs=1, tol=0 if "exact" in method else DEFAULT_TOL
            )
            explainer.explain(X_test[:1])  # compile outside the timing
            start = time.perf_counter()
            one = explainer.explain(X_test[:1]).values
            t_one = time.perf_counter() - start
            start = time.perf_counter()
            values = explainer.explain(X_test[:100]).values
            t_hundred = time.perf_counter() - start
            exact.setdefault(d, values)
            rows.append(_row(d, method, model, t_one, t_hundred, 100, values, exact[d], nodes))
            assert np.allclose(one, values[:1], rtol=0, atol=1e-13)
            continue
        explain = {
            "shapiq": shapiq_values,
            "recursion": recursion_values,
            "kernelshap": kernelshap_values,
            "pkex-exact": exact_values,
        }[method](model)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            per_point, values = time_points(explain, X_test[:100], budget)
        rows.append(
            _row(
                d,
                method,
                model,
                per_point,
                100 * per_point,
                len(values),
                values,
                exact[d][: len(values)],
                nodes,
            )
        )
    return rows


def exact_values(model):
    explainer = ProductKernelExplainer(model, n_jobs=1, tol=0)
    return lambda x: explainer.explain(x[None, :]).values[0]


def _row(d, method, model, t_one, t_hundred, points_timed, values, exact, nodes):
    scale = np.abs(exact).sum(axis=1)
    exact_nodes = (d + 1) // 2
    return {
        "d": d,
        "method": method,
        "n_support_vectors": model.support_vectors_.shape[0],
        "nodes": nodes if method == "pkex" else exact_nodes if method == "pkex-exact" else "",
        "seconds_1_point": t_one,
        "seconds_100_points": t_hundred,
        "points_timed": points_timed,
        "max_abs_diff": float(np.abs(values - exact).max()),
        "relative_error": float(np.mean(np.abs(values - exact).sum(axis=1) / scale)),
    }


def _ratio(ratio):
    return f"{ratio:,.0f}x" if ratio >= 10 else f"{ratio:.2g}x"


def summary(rows):
    by = {(r["d"], r["method"]): r for r in rows}
    table = []
    for r in rows:
        pkex = by[(r["d"], "pkex")]
        table.append(
            [
                r["d"],
                r["method"],
                r["n_support_vectors"],
                r["nodes"],
                f"{r['seconds_1_point']:.4f}",
                f"{r['seconds_100_points']:.3f}"
                + ("" if r["points_timed"] == 100 else f" (from {r['points_timed']})"),
                "1x"
                if r["method"] == "pkex"
                else f"**{_ratio(r['seconds_100_points'] / pkex['seconds_100_points'])}**",
                f"{r['max_abs_diff']:.1e}",
                f"{r['relative_error']:.1e}",
            ]
        )
    header = [
        "d",
        "method",
        "SVs",
        "nodes",
        "1 point s",
        "100 points s",
        "slower than pkex",
        "max abs diff vs exact",
        "relative error",
    ]
    return markdown_table(header, table)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=list(DIMS))
    parser.add_argument(
        "--budget",
        type=float,
        default=60.0,
        help="seconds per slow method and d before extrapolating",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--kernel", choices=list(KERNELS), default="half-scale")
    parser.add_argument(
        "--max-slow-d",
        type=int,
        default=1000,
        help="largest d at which shapiq and the recursion run",
    )
    args = parser.parse_args(argv)
    rows = run(args.dims, args.budget, args.seed, args.methods, args.kernel, args.max_slow_d)
    write_results(
        args.out,
        "explain",
        rows,
        "Explainer benchmark",
        f"`python -m benchmarks.explain {' '.join(argv or sys.argv[1:])}` (RBF SVR, 500 "
        f"training points, gamma {args.kernel}, seed {args.seed}, budget {args.budget:.0f} s "
        "per slow method, one thread). Times for 100 points marked 'from k' are k measured "
        "points scaled to 100. nodes: the most any pair needed under the error bound "
        "(pkex) or the exact count ceil(d / 2) (pkex-exact).",
        summary(rows),
    )


if __name__ == "__main__":
    main()
