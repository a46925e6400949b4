"""Which bandwidth scales keep the values and the overall test sound as d grows.

    python -m benchmarks.scale.high_d [--seeds 5] [--features 20 100 500 2000]

n = 200; y = x0 + x1^2 + sin(3 x2) + x3 + 0.5 x4 + 0.3 e (the planted signal of
``benchmarks.scale``), and a null (y independent of X). For the default ``scales="auto"``,
(1, sqrt(d)), and for ``scales=[1]``: how many of the five planted features rank in the top
five, the overall test's rejection rate at 0.05 under the signal and under the null (199
permutations), and the fit time. Results go to ``results/high_d.md``.
"""

import argparse
import time
from pathlib import Path

import numpy as np

from benchmarks.scale.__main__ import planted
from pkex_select import HSICShapleySelector

RESULTS = Path(__file__).parent / "results"
SCALES = {"auto (1, sqrt d)": "auto", "[1]": [1.0]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--features", type=int, nargs="+", default=[20, 100, 500, 2000])
    args = parser.parse_args(argv)
    lines = [
        "# Bandwidth scales as d grows (n = 200)",
        "",
        f"Command: `python -m benchmarks.scale.high_d --seeds {args.seeds} --features "
        f"{' '.join(map(str, args.features))}`; {args.seeds} data sets per cell, 199 "
        "permutations (a rejection rate is a count out of the data sets).",
        "",
        "| d | scales | planted in top 5 (mean) | overall test: power | size (null) | s/fit |",
        "|---|---|---|---|---|---|",
    ]
    for d in args.features:
        for label, scales in SCALES.items():
            found, power, size, seconds = [], [], [], []
            for seed in range(args.seeds):
                X, y = planted(200, d, seed)
                start = time.perf_counter()
                selector = HSICShapleySelector(
                    scales=scales, n_permutations=199, random_state=seed
                ).fit(X, y)
                seconds.append(time.perf_counter() - start)
                found.append(len(set(np.argsort(-selector.shapley_values_)[:5]) & set(range(5))))
                power.append(selector.pvalue_ <= 0.05)
                null_y = np.random.default_rng(seed + 1000).permutation(y)
                null = HSICShapleySelector(
                    scales=scales, n_permutations=199, random_state=seed
                ).fit(X, null_y)
                size.append(null.pvalue_ <= 0.05)
            lines.append(
                f"| {d} | {label} | {np.mean(found):.1f} | {sum(power)}/{args.seeds} | "
                f"{sum(size)}/{args.seeds} | {np.median(seconds):.2f} |"
            )
            print(lines[-1], flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "high_d.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
