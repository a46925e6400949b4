"""Permutations that stop when every decision is settled, against all of them.

    python -m benchmarks.games.sequential [--repetitions 200] [--rows 800] [--n-jobs 2]

``alpha=0.05`` (maxT, at most 999 permutations) looks after 157 and 471 permutations
(``pkex_select._pvalues.sequential_looks``) and stops where every decision is settled
(``pkex_select._pvalues.settled``, resampling risk 0.001). On the same data sets, the
same fit with every permutation (no looks): friedman1 (n =
``--rows``, d = 20, noise 1; features 0-4 relevant, 5-19 a partial null) for power and
the family-wise error over the nulls, and the global null (y drawn apart from X) for the
size of the overall test and the family-wise error. CPU seconds per fit and the
permutations run."""

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed

from benchmarks._measure import one_thread, records_table, write_results

RESULTS = Path(__file__).parent / "results"


def one(scenario, rows, repetition, sequential):
    one_thread()
    from sklearn.datasets import make_friedman1

    from pkex_select import HSICShapleySelector, _pairgame, _pvalues

    # Set on every call: the workers of joblib run many jobs each.
    _pairgame.sequential_looks = (
        _pvalues.sequential_looks if sequential else (lambda alpha, n_permutations: [])
    )
    X, y = make_friedman1(rows, 20, noise=1.0, random_state=repetition)
    if scenario == "global null":
        y = np.random.default_rng(repetition).permutation(y)
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = HSICShapleySelector(alpha=0.05, n_permutations=999, random_state=repetition)
        fitted.fit(X, y)
    seconds = time.process_time() - start
    kept = fitted.get_support()
    relevant = slice(0, 5) if scenario == "friedman1" else slice(0, 0)
    nulls = slice(5, 20) if scenario == "friedman1" else slice(0, 20)
    return {
        "scenario": scenario,
        "rule": "sequential" if sequential else "all 999",
        "relevant kept": kept[relevant].mean() if scenario == "friedman1" else np.nan,
        "any null kept": float(kept[nulls].any()),
        "overall rejected": float(fitted.pvalue_ <= 0.05),
        "permutations": fitted.n_permutations_,
        "seconds": seconds,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repetitions", type=int, default=200)
    parser.add_argument("--rows", type=int, default=800)
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args(argv)
    jobs = [
        (scenario, args.rows, r, sequential)
        for scenario in ("friedman1", "global null")
        for r in range(args.repetitions)
        for sequential in (True, False)
    ]
    records = Parallel(n_jobs=args.n_jobs)(delayed(one)(*job) for job in jobs)
    rows = []
    for scenario in ("friedman1", "global null"):
        for rule in ("sequential", "all 999"):
            mine = [r for r in records if r["scenario"] == scenario and r["rule"] == rule]
            kept = np.array([r["relevant kept"] for r in mine])
            fwer = np.array([r["any null kept"] for r in mine])
            overall = np.array([r["overall rejected"] for r in mine])
            error = fwer.std() / np.sqrt(fwer.size)
            rows.append(
                {
                    "scenario": scenario,
                    "rule": rule,
                    "relevant kept": "" if scenario != "friedman1" else f"{kept.mean():.3f}",
                    "FWER over the nulls": f"{fwer.mean():.3f} ({error:.3f})",
                    "overall rejected": f"{overall.mean():.3f}",
                    "mean permutations": f"{np.mean([r['permutations'] for r in mine]):.0f}",
                    "mean CPU s": f"{np.mean([r['seconds'] for r in mine]):.2f}",
                }
            )
    write_results(
        RESULTS,
        "sequential",
        rows,
        "Sequential permutations against all of them",
        f"{args.repetitions} data sets per scenario, n = {args.rows}, d = 20, alpha = 0.05 "
        "(maxT), at most 999 permutations; the standard error of the FWER in brackets. "
        f"`python -m benchmarks.games.sequential --repetitions {args.repetitions} --rows "
        f"{args.rows}`.",
        records_table(rows),
    )


if __name__ == "__main__":
    main()
