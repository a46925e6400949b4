"""What a tested selection costs beside the default fit: ``alpha=0.05`` against k features.

    python -m benchmarks.scale.alpha_cost [--rows 2000] [--features 20] [--seeds 6]
                                          [--out benchmarks/scale/results]

friedman1 (``make_friedman1(n, d, noise=1)``), one thread, in this process: for each seed,
``HSICShapleySelector(alpha=0.05)`` (the ANOVA game's maxT tests, 999 permutations:
circular shifts with more samples than that, else random ones that stop where every decision
is settled) and the default
``HSICShapleySelector(n_features_to_select=5)``, interleaved so that both see the same state
of the machine; CPU seconds, the ratio per seed and the medians. "kept" counts the five
relevant features among those the test keeps, "false" the others.
"""

import argparse
from pathlib import Path

import numpy as np

from benchmarks._measure import one_thread, records_table, write_results
from benchmarks.scale.monotone import cpu_seconds

RESULTS = Path(__file__).parent / "results"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    one_thread()
    from sklearn.datasets import make_friedman1

    from pkex_select import HSICShapleySelector

    X, y = make_friedman1(args.rows, args.features, noise=1.0, random_state=0)
    # Compile first, both ways of permuting (shifts with fewer permutations than samples)
    # and the default fit's kernels.
    HSICShapleySelector(alpha=0.05, random_state=0).fit(X[:300], y[:300])
    HSICShapleySelector(alpha=0.05, n_permutations=99, random_state=0).fit(X[:300], y[:300])
    HSICShapleySelector(n_features_to_select=5, random_state=0).fit(X[:300], y[:300])
    rows = []
    for seed in range(args.seeds):
        tested_seconds, tested = cpu_seconds(
            1, HSICShapleySelector(alpha=0.05, random_state=seed).fit, X, y
        )
        default_seconds, _ = cpu_seconds(
            1, HSICShapleySelector(n_features_to_select=5, random_state=seed).fit, X, y
        )
        kept = tested.get_support(indices=True)
        rows.append(
            {
                "seed": seed,
                "alpha=0.05 s": round(tested_seconds, 3),
                "default s": round(default_seconds, 3),
                "ratio": round(tested_seconds / default_seconds, 2),
                "permutations": tested.n_permutations_,
                "kept": int(np.sum(kept < 5)),
                "false": int(np.sum(kept >= 5)),
            }
        )
        print(rows[-1], flush=True)
    tested_median = np.median([r["alpha=0.05 s"] for r in rows])
    default_median = np.median([r["default s"] for r in rows])
    note = (
        f"`python -m benchmarks.scale.alpha_cost --rows {args.rows} --features "
        f"{args.features} --seeds {args.seeds}`; CPU seconds on one thread. Medians: "
        f"alpha=0.05 {tested_median:.3f} s, the default fit {default_median:.3f} s, "
        f"ratio of the medians {tested_median / default_median:.2f}, median of the ratios "
        f"{np.median([r['ratio'] for r in rows]):.2f}."
    )
    write_results(
        args.out,
        "alpha_cost",
        rows,
        "alpha=0.05 against the default fit",
        note,
        records_table(rows),
    )
    print(note)


if __name__ == "__main__":
    main()
