"""HSIC selection benchmark: fit time and peak memory against pyHSICLasso.

    python -m benchmarks.hsic [--sizes 500 2000 5875] [--features 20] [--seed 0] [--out DIR]

Synthetic regression, y = sin(2 x0) + x1^2 + x2 x3 + noise, d = 20 standard normal features.
Methods, each in a fresh worker process (time = best of up to 3 fits; peak = growth of the
resident set during one fit):

- ``pkex-exact``: ``HSICShapleySelector()`` (biased HSIC over all n(n-1)/2 pairs), one thread,
  and ``pkex-exact-2jobs`` with ``n_jobs=2``;
- ``pkex-block``: ``HSICShapleySelector(estimate="block")`` (B = 20, M = 3);
- ``hsiclasso``: pyHSICLasso's block HSIC Lasso, B = 20, M = 3, ``n_jobs=1``.

``recovered`` counts how many of the four relevant features are among the top four.
Writes ``results/hsic.csv`` and ``results/hsic.md``.
"""

import argparse
import contextlib
import io
import json
import sys
import warnings
from pathlib import Path

import numpy as np

from benchmarks._measure import markdown_table, measure, progress, run_worker, write_results

SIZES = (500, 2000, 5875)
METHODS = ("pkex-exact", "pkex-exact-2jobs", "pkex-block", "hsiclasso")
RESULTS = Path(__file__).parent / "results"
RELEVANT = {0, 1, 2, 3}


def make_data(n_samples, n_features, seed):
    rng = np.random.default_rng([seed, n_samples])
    X = rng.normal(size=(n_samples, n_features))
    y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 + X[:, 2] * X[:, 3] + 0.3 * rng.normal(size=n_samples)
    return X, y


def fitter(method):
    if method == "hsiclasso":
        from pyHSICLasso import HSICLasso

        def fit(X, y):
            lasso = HSICLasso()
            with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lasso.input(X, y)
                lasso.regression(4, B=20, M=3, n_jobs=1)
            return list(lasso.get_index())

        return fit
    from pkex_select import HSICShapleySelector

    params = {
        "pkex-exact": {},
        "pkex-exact-2jobs": {"n_jobs": 2},
        "pkex-block": {"estimate": "block", "random_state": 0},
    }[method]

    def fit(X, y):
        selector = HSICShapleySelector(n_features_to_select=4, **params).fit(X, y)
        return list(selector.get_support(indices=True))

    return fit


def worker(method, n_samples, n_features, seed):
    X, y = make_data(n_samples, n_features, seed)
    fit = fitter(method)
    fit(X[:60], y[:60])  # imports, compilation
    seconds, peak_mib, top = measure(lambda: fit(X, y), min_seconds=2.0, max_repeats=3)
    return {
        "method": method,
        "n": n_samples,
        "d": n_features,
        "seconds": seconds,
        "peak_mib": peak_mib,
        "recovered": len(RELEVANT & set(map(int, top))),
    }


def summary(rows):
    by = {(r["n"], r["method"]): r for r in rows}
    table = []
    for r in rows:
        lasso = by.get((r["n"], "hsiclasso"))
        ratio = f"{r['seconds'] / lasso['seconds']:.2f}" if lasso else "-"
        table.append(
            [
                r["n"],
                r["method"],
                f"{r['seconds']:.3f}",
                ratio,
                f"{r['peak_mib']:.0f}",
                f"{r['recovered']}/4",
            ]
        )
    return markdown_table(
        ["n", "method", "fit s", "time / pyHSICLasso", "peak MiB", "relevant in top 4"], table
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--worker", nargs=4, metavar=("METHOD", "N", "D", "SEED"))
    args = parser.parse_args(argv)
    if args.worker:
        method, n, d, seed = args.worker
        print(json.dumps(worker(method, int(n), int(d), int(seed))))
        return
    jobs = [(n, m) for n in args.sizes for m in METHODS]
    rows = [
        run_worker("benchmarks.hsic", m, n, args.features, args.seed)
        for n, m in progress(jobs, desc="hsic benchmark", file=sys.stderr)
    ]
    write_results(
        args.out,
        "hsic",
        rows,
        "HSIC selection benchmark",
        f"`python -m benchmarks.hsic` (d = {args.features}, seed {args.seed}); best of up to "
        "3 fits, each method in a fresh process.",
        summary(rows),
    )


if __name__ == "__main__":
    main()
