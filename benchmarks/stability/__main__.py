"""Exactness and time as d grows: the engine against the published algorithms.

    python -m benchmarks.stability [--dims 10 15 ... 5000] [--seed 0] [--out DIR]

A synthetic regression as published (n = 500 training points, standard normal features,
y = sin(x0) + x1 x2 + 0.5 x3^2 + noise) is fitted with an RBF ``KernelRidge`` per d. To keep
the model informative at large d (the published GP predicted about 0 from d = 50, which
makes the check weak), the kernel is exp(-||x - x'||^2 / (2 d)): every kernel factor stays
near 1 - 1/d while the product stays of order 1. The spread of f(x) over the test points is
reported beside each d.

Methods, per test point (500 pairs): ``pkex`` (this library's engine), ``recursion`` (the
published prefix/suffix recursion; O(d^2) memory per pair, run while it fits in memory),
``fft`` and ``chebyshev`` (interpolating the generating polynomial, as published; run up
to d = 1000) and ``enumeration`` (d <= 20). For each: the absolute efficiency error
|sum(phi) - (f(x) - v(empty))| averaged over test points, and seconds per point.
Writes ``results/results.csv`` (method, d, abs_error, seconds, ...) and ``results/figure.png``
(log-log, with the published numbers from ``benchmarks/reference``).
"""

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.kernel_ridge import KernelRidge

from benchmarks._measure import markdown_table, progress, save_figure, write_results
from pkex_select import shapley_values
from pkex_select.kernels import factor_tensor
from tests.references import enumeration_shapley, interpolation_shapley, recursion_shapley

DIMS = (10, 15, 20, 25, 30, 40, 50, 70, 100, 200, 500, 1000, 2000, 5000)
RESULTS = Path(__file__).parent / "results"
PUBLISHED = Path(__file__).resolve().parents[1] / "reference" / "published_stability.csv"
RECURSION_MAX_BYTES = 8 * 2**30
LIMITS = {"enumeration": 20, "fft": 1000, "chebyshev": 1000}


def make_model(n_features, seed):
    rng = np.random.default_rng([seed, n_features])
    X = rng.normal(size=(520, n_features))
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.5 * X[:, 3] ** 2 + 0.1 * rng.normal(size=520)
    model = KernelRidge(kernel="rbf", gamma=1.0 / (2 * n_features), alpha=0.1)
    return model.fit(X[:500], y[:500]), X[500:]


def solvers():
    return {
        "pkex": lambda Z, w: shapley_values(Z, w, n_jobs=1),
        "recursion": recursion_shapley,
        "fft": lambda Z, w: interpolation_shapley(Z, w, "fft"),
        "chebyshev": lambda Z, w: interpolation_shapley(Z, w, "chebyshev"),
        "enumeration": enumeration_shapley,
    }


def runs(method, d, n_pairs):
    if method == "recursion":
        return 8 * 1.5 * (d + 1) ** 2 * n_pairs <= RECURSION_MAX_BYTES
    return d <= LIMITS.get(method, np.inf)


def measure_d(d, seed):
    model, X_test = make_model(d, seed)
    points = X_test[: 3 if d <= 500 else 1]
    weights = model.dual_coef_
    gamma = np.full(d, model.gamma)
    outputs = model.predict(X_test)
    rows = []
    solve = solvers()
    solve["pkex"](factor_tensor(points[:1], model.X_fit_[:2], "rbf", gamma)[0], weights[:2])
    for method in solve:
        if not runs(method, d, len(weights)):
            continue
        errors, seconds = [], 0.0
        for x in points:
            Z = factor_tensor(x[None, :], model.X_fit_, "rbf", gamma)[0]
            start = time.perf_counter()
            with np.errstate(all="ignore"):
                phi = solve[method](Z, weights)
            seconds += time.perf_counter() - start
            f_x = float(weights @ np.prod(Z, axis=1))
            errors.append(abs(phi.sum() - (f_x - weights.sum())))
        error = float(np.mean(errors))
        rows.append(
            {
                "method": method,
                "d": d,
                "abs_error": error if np.isfinite(error) else float("inf"),
                "seconds": seconds / len(points),
                "points": len(points),
                "f_spread": float(np.std(outputs)),
                "f_mean": float(np.mean(outputs)),
            }
        )
    return rows


def figure(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(PUBLISHED) as f:
        published = list(csv.DictReader(f))
    colours = {
        "pkex": "#d62728",
        "recursion": "#1f77b4",
        "fft": "#2ca02c",
        "chebyshev": "#9467bd",
        "enumeration": "#7f7f7f",
    }
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    for method, colour in colours.items():
        ours = [r for r in rows if r["method"] == method]
        if ours:
            d = [r["d"] for r in ours]
            left.loglog(
                d,
                [max(r["abs_error"], 1e-18) for r in ours],
                "o-",
                color=colour,
                label=f"{method} (this run)",
            )
            right.loglog(d, [r["seconds"] for r in ours], "o-", color=colour, label=method)
        # The published "pkex" is the recursion.
        name = "pkex" if method == "recursion" else method
        theirs = [r for r in published if r["method"] == name and method != "pkex"]
        if theirs:
            left.loglog(
                [float(r["d"]) for r in theirs],
                [float(r["abs_error"]) for r in theirs],
                "x:",
                color=colour,
                label=f"{method} (published)",
            )
            right.loglog(
                [float(r["d"]) for r in theirs],
                [float(r["seconds"]) for r in theirs],
                "x:",
                color=colour,
            )
    left.axhline(1e-10, color="black", linewidth=0.6, linestyle="--")
    left.set(
        xlabel="d",
        ylabel="|sum(phi) - (f(x) - v(empty))|",
        title="Efficiency error",
        ylim=(1e-18, 1e210),
    )
    right.set(xlabel="d", ylabel="seconds per point", title="Time (published: 24 cores)")
    left.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=list(DIMS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    rows = []
    for d in progress(args.dims, desc="stability", file=sys.stderr):
        rows += measure_d(d, args.seed)
    table = markdown_table(
        ["d", "method", "abs error", "s / point", "f(x) spread"],
        [
            [
                r["d"],
                r["method"],
                f"{r['abs_error']:.2e}",
                f"{r['seconds']:.4g}",
                f"{r['f_spread']:.3f}",
            ]
            for r in rows
        ],
    )
    write_results(
        args.out,
        "results",
        rows,
        "Stability benchmark",
        f"`python -m benchmarks.stability` (seed {args.seed}); n = 500 training "
        "points; time per point on one thread.",
        table,
    )
    save_figure(figure, rows, args.out / "figure.png")


if __name__ == "__main__":
    main()
