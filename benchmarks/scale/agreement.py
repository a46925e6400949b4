"""How well the block estimator agrees with the exact one where ``estimate="auto"`` switches.

    python -m benchmarks.scale.agreement [--n 4000] [--seeds 5]

On friedman1 (5 relevant features of 20, noise 1) and a classification version of it, the
exact (biased) attribution is compared with the block estimator at several block sizes and
repetition counts: Pearson and Spearman correlation of the values (Spearman is dominated by
the order of the 15 noise features' near-zero values), overlap of the top five, whether the
five relevant features are the top five, and the fit time of each. Results go to
``results/agreement.md``.
"""

import argparse
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr
from sklearn.datasets import make_friedman1

from pkex_select import HSICShapleySelector

RESULTS = Path(__file__).parent / "results"
SETTINGS = [(20, 3), (20, 10), (50, 3), (50, 10), (100, 3), (100, 10)]


def _data(task, n, seed):
    X, y = make_friedman1(n_samples=n, n_features=20, noise=1.0, random_state=seed)
    return X, (y > np.median(y)).astype(int) if task == "classification" else y


def _fit(X, y, **params):
    start = time.perf_counter()
    selector = HSICShapleySelector(random_state=0, **params).fit(X, y)
    return selector.shapley_values_, time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4000)
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args(argv)
    rows = []
    for task in ("regression", "classification"):
        for seed in range(args.seeds):
            X, y = _data(task, args.n, seed)
            exact, exact_time = _fit(X, y, estimate="biased")
            top = set(np.argsort(-exact)[:5])
            for block_size, repetitions in SETTINGS:
                values, seconds = _fit(
                    X, y, estimate="block", block_size=block_size, n_repetitions=repetitions
                )
                rows.append(
                    {
                        "task": task,
                        "seed": seed,
                        "B": block_size,
                        "R": repetitions,
                        "spearman": spearmanr(exact, values).statistic,
                        "pearson": np.corrcoef(exact, values)[0, 1],
                        "top5": len(top & set(np.argsort(-values)[:5])),
                        "relevant": set(np.argsort(-values)[:5]) == set(range(5)),
                        "seconds": seconds,
                        "exact_seconds": exact_time,
                        "exact_relevant": top == set(range(5)),
                    }
                )
                print(rows[-1], flush=True)
    lines = [
        f"# Block against exact attribution, friedman1 n = {args.n}, d = 20 "
        f"({args.seeds} data sets per task)",
        "",
        f"Command: `python -m benchmarks.scale.agreement --n {args.n} --seeds {args.seeds}`",
        "",
        "| task | B | R | Pearson (min) | Spearman (min) | top-5 overlap (mean) | "
        "relevant = top 5 | block s | exact s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for task in ("regression", "classification"):
        for block_size, repetitions in SETTINGS:
            group = [
                r for r in rows if (r["task"], r["B"], r["R"]) == (task, block_size, repetitions)
            ]
            lines.append(
                f"| {task} | {block_size} | {repetitions} | "
                f"{np.mean([r['pearson'] for r in group]):.3f} "
                f"({min(r['pearson'] for r in group):.3f}) | "
                f"{np.mean([r['spearman'] for r in group]):.3f} "
                f"({min(r['spearman'] for r in group):.3f}) | "
                f"{np.mean([r['top5'] for r in group]):.1f} | "
                f"{sum(r['relevant'] for r in group)}/{len(group)} "
                f"(exact {sum(r['exact_relevant'] for r in group)}/{len(group)}) | "
                f"{np.median([r['seconds'] for r in group]):.2f} | "
                f"{np.median([r['exact_seconds'] for r in group]):.2f} |"
            )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "agreement.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
