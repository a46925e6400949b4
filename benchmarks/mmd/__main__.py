"""MMD attribution benchmark: cost of permutation tests, calibration and power.

    python -m benchmarks.mmd [--repetitions 200] [--permutations 1000] [--seed 0] [--out DIR]

1. Cost: ``MMDShapleyAttributor`` on n = 600 (300 + 300), d = 20, with 0 and with 1000
   permutations; the extra time per permutation.
2. Calibration: both samples from one distribution (n = 100 + 100, d = 5, 199 permutations),
   ``--repetitions`` times: how often the overall test and each feature's test reject at
   alpha = 0.05, with 95% Clopper-Pearson intervals (should cover 0.05).
3. Power: the same with a mean shift of 0.5 standard deviations in feature 0.
4. At scale (``--scale-rows``, default 100000 per sample): the block estimator (B = 20,
   M = 3, ``n_jobs=2``, 199 permutations) attributes a drift in 2 of 20 features between two
   samples of that many rows; its seconds and peak memory. Beside it, on 2000 + 2000 rows
   where the exact unbiased estimator runs too, how close the block values come to the exact
   ones (relative L2 error, and whether the top two features agree), over 5 seeds.

Writes ``results/mmd.csv`` and ``results/mmd.md``.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import binomtest

from benchmarks._measure import markdown_table, progress, write_results
from pkex_select import MMDShapleyAttributor, attribute_shift

RESULTS = Path(__file__).parent / "results"
ALPHA = 0.05


def permutation_cost(n_permutations, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(600, 20))
    X[300:, :2] += 0.3
    y = np.repeat([0, 1], 300)
    MMDShapleyAttributor().fit(X[:40], y[280:320])  # compile
    rows = []
    for permutations in (0, n_permutations):
        start = time.perf_counter()
        MMDShapleyAttributor(n_permutations=permutations, random_state=seed).fit(X, y)
        rows.append(
            {
                "experiment": "cost",
                "setting": f"{permutations} permutations",
                "value": time.perf_counter() - start,
                "low": "",
                "high": "",
            }
        )
    extra = (rows[1]["value"] - rows[0]["value"]) / n_permutations
    rows.append(
        {
            "experiment": "cost",
            "setting": "seconds per permutation",
            "value": extra,
            "low": "",
            "high": "",
        }
    )
    return rows


def drifted(n_per_sample, seed, d=20):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(2 * n_per_sample, d))
    X[n_per_sample:, 0] += 0.3
    X[n_per_sample:, 1] *= 1.3
    return X, np.repeat([0, 1], n_per_sample)


def at_scale(n_per_sample, seed):
    from benchmarks._measure import measure

    X, y = drifted(n_per_sample, seed)
    params = {
        "estimate": "block",
        "n_permutations": 199,
        "alpha": ALPHA,
        "n_jobs": 2,
        "random_state": seed,
    }
    MMDShapleyAttributor(**params).fit(X[:: n_per_sample // 50], y[:: n_per_sample // 50])
    seconds, peak, fitted = measure(lambda: MMDShapleyAttributor(**params).fit(X, y), max_repeats=1)
    setting = f"block, {n_per_sample} + {n_per_sample} rows, d = 20, 199 permutations"
    rows = [
        {
            "experiment": "at scale",
            "setting": setting + ": seconds",
            "value": seconds,
            "low": "",
            "high": "",
        },
        {
            "experiment": "at scale",
            "setting": setting + ": peak MiB",
            "value": peak,
            "low": "",
            "high": "",
        },
        {
            "experiment": "at scale",
            "setting": setting + ": features kept at alpha 0.05",
            "value": " ".join(map(str, fitted.get_support(indices=True))),
            "low": "",
            "high": "",
        },
    ]
    errors, agree = [], 0
    for k in range(5):
        X, y = drifted(2000, seed + k)
        exact = MMDShapleyAttributor(estimate="unbiased", n_jobs=2).fit(X, y).shapley_values_
        block = (
            MMDShapleyAttributor(estimate="block", n_jobs=2, random_state=seed + k)
            .fit(X, y)
            .shapley_values_
        )
        errors.append(np.linalg.norm(block - exact) / np.linalg.norm(exact))
        agree += set(np.argsort(-block)[:2]) == set(np.argsort(-exact)[:2])
    rows += [
        {
            "experiment": "at scale",
            "setting": "block vs exact unbiased, 2000 + 2000 rows: relative L2 error (mean of 5)",
            "value": float(np.mean(errors)),
            "low": float(np.min(errors)),
            "high": float(np.max(errors)),
        },
        {
            "experiment": "at scale",
            "setting": "block vs exact: same top two features (of 5 seeds)",
            "value": agree,
            "low": "",
            "high": "",
        },
    ]
    return rows


def rejection_rates(shift, repetitions, seed):
    rng = np.random.default_rng(seed)
    overall, per_feature = 0, np.zeros(5)
    for _ in progress(range(repetitions), desc=f"shift {shift}", file=sys.stderr):
        reference = rng.normal(size=(100, 5))
        current = rng.normal(size=(100, 5))
        current[:, 0] += shift
        attributor = attribute_shift(
            reference, current, n_permutations=199, random_state=int(rng.integers(2**31))
        )
        overall += attributor.pvalue_ <= ALPHA
        per_feature += attributor.pvalues_ <= ALPHA
    experiment = "null" if shift == 0 else f"mean shift {shift} in x0"
    rows = [_rate(experiment, "overall test", overall, repetitions)]
    rows += [
        _rate(experiment, f"feature x{j}", int(k), repetitions) for j, k in enumerate(per_feature)
    ]
    return rows


def _rate(experiment, setting, rejections, repetitions):
    interval = binomtest(int(rejections), repetitions).proportion_ci(0.95)
    return {
        "experiment": experiment,
        "setting": setting,
        "value": rejections / repetitions,
        "low": interval.low,
        "high": interval.high,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=200)
    parser.add_argument("--permutations", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--scale-rows", type=int, default=100_000)
    args = parser.parse_args(argv)
    rows = permutation_cost(args.permutations, args.seed)
    rows += at_scale(args.scale_rows, args.seed)
    rows += rejection_rates(0.0, args.repetitions, args.seed)
    rows += rejection_rates(0.5, args.repetitions, args.seed + 1)
    table = markdown_table(
        ["experiment", "setting", "value", "95% interval"],
        [
            [
                r["experiment"],
                r["setting"],
                f"{r['value']:.4g}" if not isinstance(r["value"], str) else r["value"],
                f"[{r['low']:.3f}, {r['high']:.3f}]" if r["low"] != "" else "",
            ]
            for r in rows
        ],
    )
    write_results(
        args.out,
        "mmd",
        rows,
        "MMD attribution benchmark",
        f"`python -m benchmarks.mmd` (seed {args.seed}, {args.repetitions} repetitions). Cost "
        "rows are seconds; the other rows are rejection rates at alpha = "
        f"{ALPHA} with Clopper-Pearson intervals.",
        table,
    )


if __name__ == "__main__":
    main()
