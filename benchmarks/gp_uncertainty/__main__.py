"""The exact posterior covariance of GP Shapley values: its cost, and sampling's error.

    python -m benchmarks.gp_uncertainty [--points 100] [--train 1000] [--repeats 3]

1. Cost (one thread, CPU time, median of ``--repeats``): ``explain(X, return_covariance=True)``
   against ``explain(X)`` for the same 100 points of a GaussianProcessRegressor fitted on
   n = 1000 rows (ConstantKernel x RBF with per-feature length scales + WhiteKernel; the
   background is 100 training rows), for d = 5, 10, 20, 50 and 100.
2. Error against cost of sampling (d = 4, a background of 4 rows: every coalition and grid
   point enumerable): posterior draws of f at the grid points (``sample_y``), each draw's
   Shapley values exact, their sample covariance as the estimate, as GP-SHAP estimates it.
   Reported: relative Frobenius error of the covariance against the exact one, and CPU time,
   for 100 to 10,000 draws, beside the exact covariance's.
"""

import argparse
import time
from pathlib import Path

import numpy as np

from benchmarks._measure import one_thread, records_table, write_results

RESULTS = Path(__file__).parent / "results"


def _gp(n, d, seed=0):
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2 + 0.2 * rng.normal(size=n)
    scales = np.full(d, np.sqrt(d))
    scales[:2] = 1.0
    kernel = ConstantKernel(1.0) * RBF(scales) + WhiteKernel(0.04)
    gp = GaussianProcessRegressor(kernel, optimizer=None, normalize_y=True).fit(X, y)
    return gp, X, rng


def _cpu(func, repeats):
    times = []
    for _ in range(repeats):
        start = time.process_time()
        result = func()
        times.append(time.process_time() - start)
    return float(np.median(times)), result


def cost(args):
    from pkex_select import ProductKernelExplainer

    rows = []
    for d in (5, 10, 20, 50, 100):
        gp, X, rng = _gp(args.train, d)
        explainer = ProductKernelExplainer(
            gp, value_function="observational", background=X[: args.background]
        )
        points = rng.normal(size=(args.points, d))
        explainer.explain(points[:2], return_covariance=True)  # compile outside the timing
        mean_seconds, _ = _cpu(lambda e=explainer, p=points: e.explain(p), args.repeats)
        both_seconds, explanation = _cpu(
            lambda e=explainer, p=points: e.explain(p, return_covariance=True), args.repeats
        )
        rows.append(
            {
                "d": d,
                "mean explanation (s)": f"{mean_seconds:.3f}",
                "with covariance (s)": f"{both_seconds:.3f}",
                "ratio": f"{both_seconds / mean_seconds:.2f}",
                "median std over median absolute value": (
                    f"{np.median(explanation.std) / np.median(np.abs(explanation.values)):.3f}"
                ),
            }
        )
        print(rows[-1], flush=True)
    write_results(
        RESULTS,
        "cost",
        rows,
        "Cost of the exact covariance",
        f"{args.points} points, GaussianProcessRegressor on n = {args.train} rows, background "
        f"of {args.background} rows; one thread, CPU time, median of {args.repeats}. `python -m "
        "benchmarks.gp_uncertainty`.",
        records_table(rows),
    )


def sampling(args):
    from pkex_select import ProductKernelExplainer
    from tests.test_gp_uncertainty import _grid, _shapley_weights

    d = 4
    gp, X, rng = _gp(200, d, seed=1)
    background = X[:4]
    explainer = ProductKernelExplainer(gp, value_function="observational", background=background)
    x = rng.normal(size=d)
    exact_seconds, explanation = _cpu(
        lambda: explainer.explain(x[None], return_covariance=True), args.repeats
    )
    exact = explanation.covariance[0]
    points, M = _grid(x, background)
    W = _shapley_weights(d) @ M
    noise = gp.kernel_.k2.noise_level * gp._y_train_std**2
    rows = [
        {"method": "exact", "draws": "", "relative error": "0", "seconds": f"{exact_seconds:.4f}"}
    ]
    for draws in (100, 1000, 10_000):

        def sampled(draws=draws):
            mean, cov = gp.predict(points, return_cov=True)
            cov = cov - noise * np.eye(len(points))  # f, not f + noise
            f = np.random.default_rng(draws).multivariate_normal(mean, cov, draws, method="eigh")
            return np.cov(W @ f.T)

        seconds, estimate = _cpu(sampled, args.repeats)
        error = np.linalg.norm(estimate - exact) / np.linalg.norm(exact)
        rows.append(
            {
                "method": "posterior draws",
                "draws": draws,
                "relative error": f"{error:.3f}",
                "seconds": f"{seconds:.4f}",
            }
        )
        print(rows[-1], flush=True)
    write_results(
        RESULTS,
        "sampling",
        rows,
        "Exact covariance against posterior draws",
        f"d = {d}, a background of 4 rows ({len(points)} grid points), one point; each draw "
        "of f at the grid points explained exactly; relative Frobenius error of the sample "
        "covariance; CPU time, one thread. `python -m benchmarks.gp_uncertainty`.",
        records_table(rows),
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=100)
    parser.add_argument("--train", type=int, default=1000)
    parser.add_argument("--background", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    one_thread()
    sampling(args)
    cost(args)


if __name__ == "__main__":
    main()
