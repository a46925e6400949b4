"""Exact values against sampling approximations: accuracy for time, and feature recovery.

    python -m benchmarks.approximation [--points 5] [--seed 0] [--out DIR]

1. Error against time. An RBF ``SVR`` on 50 features (500 training points). For a few test
   points the same removal game (a feature's kernel factor set to 1) is estimated by
   shap's ``KernelExplainer`` (coalitions coded as 0/1 inputs, background all zeros; no
   l1 feature pre-selection) and by
   permutation sampling (the mean marginal contribution over random feature orders),
   with growing budgets, and computed exactly by this library. Reported: relative error
   ||phi_hat - phi|| / ||phi|| and seconds per point.
2. Feature recovery, on the published synthetic functions (d = 30, n = 600, standard normal
   features, the first d/3 relevant): polynomials of degree 5 and 10,
   y = sum_{i<=p} sum_{j relevant} x_j^i, and squared exponentials,
   y = exp(sum_{j relevant} x_j^2 - 4). A GP with a per-feature RBF kernel plus white noise
   is fitted (as published); for 10 test points each method's top-|relevant| features by
   |value| are compared with the relevant set. Methods: ``pkex`` (exact), shap's
   ``KernelExplainer`` and ``SamplingExplainer`` (background: 100 training points; 200 and
   1000 samples), as published.

Writes ``results/error_vs_time.csv``, ``results/recovery.csv``, ``results/approximation.md``
and ``results/figure.png``.
"""

import argparse
import csv
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, WhiteKernel
from sklearn.svm import SVR

from benchmarks._measure import markdown_table, progress, save_figure
from pkex_select import ProductKernelExplainer

RESULTS = Path(__file__).parent / "results"
KERNEL_SHAP_BUDGETS = (200, 500, 1000, 2000, 5000, 20000)
PERMUTATION_BUDGETS = (2, 5, 10, 20, 50, 100, 200)


def svr_model(seed, d=50):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(510, d))
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.5 * X[:, 3] ** 2 + 0.1 * rng.normal(size=510)
    return SVR(gamma=1.0 / (2 * d), C=10.0, epsilon=0.01).fit(X[:500], y[:500]), X[500:]


def kernel_shap(explainer, x, budget):
    import shap

    d = explainer.n_features_in_

    def game(masks):
        return explainer.coalition_value(x[None, :], masks.astype(bool))[0]

    estimator = shap.KernelExplainer(game, np.zeros((1, d)))
    # l1_reg=False: shap's default ("auto") keeps only some features when the budget is small,
    # which biases the estimate so that it never converges.
    return estimator.shap_values(np.ones((1, d)), nsamples=budget, l1_reg=False, silent=True)[0]


def permutation_sampling(explainer, x, n_permutations, rng):
    """Mean marginal contributions along random orders (all prefixes evaluated at once)."""
    d = explainer.n_features_in_
    total = np.zeros(d)
    for _ in range(n_permutations):
        order = rng.permutation(d)
        masks = np.zeros((d + 1, d), dtype=bool)
        for position, j in enumerate(order):
            masks[position + 1 :, j] = True
        values = explainer.coalition_value(x[None, :], masks)[0]
        total[order] += np.diff(values)
    return total / n_permutations


def error_vs_time(points, seed):
    model, X_test = svr_model(seed)
    explainer = ProductKernelExplainer(model)
    explainer.explain(X_test[:1])  # compile and import outside the timing
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kernel_shap(explainer, X_test[0], 100)
    rows = []
    rng = np.random.default_rng(seed)
    for x in progress(X_test[:points], desc="error vs time", file=sys.stderr):
        start = time.perf_counter()
        exact = explainer.explain(x[None, :]).values[0]
        rows.append(_error_row("pkex (exact)", 1, time.perf_counter() - start, exact, exact))
        for budget in KERNEL_SHAP_BUDGETS:
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                estimate = kernel_shap(explainer, x, budget)
            rows.append(
                _error_row("KernelSHAP", budget, time.perf_counter() - start, estimate, exact)
            )
        for budget in PERMUTATION_BUDGETS:
            start = time.perf_counter()
            estimate = permutation_sampling(explainer, x, budget, rng)
            rows.append(
                _error_row(
                    "permutation sampling",
                    budget * 51,
                    time.perf_counter() - start,
                    estimate,
                    exact,
                )
            )
    # Average over the points for each (method, budget).
    keys = sorted({(r["method"], r["evaluations"]) for r in rows}, key=lambda k: (k[0], k[1]))

    def mean(field, key):
        return float(np.mean([r[field] for r in rows if (r["method"], r["evaluations"]) == key]))

    return [
        {
            "method": key[0],
            "evaluations": key[1],
            "seconds": mean("seconds", key),
            "relative_error": mean("relative_error", key),
        }
        for key in keys
    ]


def _error_row(method, evaluations, seconds, estimate, exact):
    error = np.linalg.norm(estimate - exact) / np.linalg.norm(exact)
    return {
        "method": method,
        "evaluations": evaluations,
        "seconds": seconds,
        "relative_error": error,
    }


def synthetic(name, n, d, rng):
    X = rng.normal(size=(n, d))
    relevant = np.arange(d // 3)
    if name.startswith("polynomial"):
        degree = int(name.split()[-1])
        y = sum((X[:, relevant] ** i).sum(axis=1) for i in range(1, degree + 1))
    else:
        y = np.exp((X[:, relevant] ** 2).sum(axis=1) - 4.0)
    return X, y, relevant


def recovery(seed, n=600, d=30, n_points=10):
    import shap

    rng = np.random.default_rng(seed)
    rows = []
    for name in progress(
        ["polynomial degree 5", "polynomial degree 10", "squared exponentials"],
        desc="recovery",
        file=sys.stderr,
    ):
        X, y, relevant = synthetic(name, n, d, rng)
        kernel = RBF(np.ones(d)) + WhiteKernel(0.1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gp = GaussianProcessRegressor(kernel, normalize_y=True, random_state=seed).fit(X, y)
        points = X[rng.choice(n, n_points, replace=False)]
        background = X[rng.choice(n, 100, replace=False)]

        def rate(values, relevant=relevant):
            k = len(relevant)
            return float(
                np.mean([len(set(relevant) & set(np.argsort(-np.abs(v))[:k])) / k for v in values])
            )

        start = time.perf_counter()
        exact = ProductKernelExplainer(gp).explain(points).values
        rows.append(
            {
                "function": name,
                "method": "pkex (exact)",
                "samples": "",
                "recovery": rate(exact),
                "seconds_per_point": (time.perf_counter() - start) / n_points,
            }
        )
        for label, make in (
            ("KernelSHAP", shap.KernelExplainer),
            ("SamplingSHAP", shap.SamplingExplainer),
        ):
            for samples in (200, 1000):
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    values = make(gp.predict, background).shap_values(
                        points, nsamples=samples, l1_reg=False, silent=True
                    )
                rows.append(
                    {
                        "function": name,
                        "method": label,
                        "samples": samples,
                        "recovery": rate(np.asarray(values)),
                        "seconds_per_point": (time.perf_counter() - start) / n_points,
                    }
                )
    return rows


def figure(error_rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for method, style in (("KernelSHAP", "o-"), ("permutation sampling", "s-")):
        rows = [r for r in error_rows if r["method"] == method]
        ax.loglog(
            [r["seconds"] for r in rows], [r["relative_error"] for r in rows], style, label=method
        )
    exact = next(r for r in error_rows if r["method"] == "pkex (exact)")
    ax.axvline(exact["seconds"], color="#d62728", label="pkex exact (error 0)")
    ax.set(
        xlabel="seconds per point",
        ylabel="relative error ||phi_hat - phi|| / ||phi||",
        title="Removal game of an RBF SVR, d = 50, 500 support vectors",
    )
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _write_csv(path, rows):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    errors = error_vs_time(args.points, args.seed)
    recovered = recovery(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    _write_csv(args.out / "error_vs_time.csv", errors)
    _write_csv(args.out / "recovery.csv", recovered)
    text = "\n".join(
        [
            "# Exact values against approximations",
            "",
            f"`python -m benchmarks.approximation --points {args.points} --seed {args.seed}`",
            "",
            "## Error against time (RBF SVR, d = 50)",
            "",
            markdown_table(
                ["method", "model evaluations", "s / point", "relative error"],
                [
                    [
                        r["method"],
                        r["evaluations"],
                        f"{r['seconds']:.4f}",
                        f"{r['relative_error']:.2e}",
                    ]
                    for r in errors
                ],
            ),
            "## Recovery of the relevant features (d = 30, first 10 relevant)",
            "",
            markdown_table(
                ["function", "method", "samples", "recovery", "s / point"],
                [
                    [
                        r["function"],
                        r["method"],
                        r["samples"],
                        f"{r['recovery']:.2f}",
                        f"{r['seconds_per_point']:.4f}",
                    ]
                    for r in recovered
                ],
            ),
        ]
    )
    (args.out / "approximation.md").write_text(text)
    print(text)
    save_figure(figure, errors, args.out / "figure.png")


if __name__ == "__main__":
    main()
