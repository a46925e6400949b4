"""Circular shifts of the labels against random permutations, on the same data sets.

    python -m benchmarks.games.shifts [--repetitions 200] [--n-jobs 2]

``alpha=0.05`` (maxT, ``n_permutations=999``) with more samples than permutations draws 999
circular shifts of the labels along a random order of the samples and computes them all in
one FFT pass (``pkex_select._shifts``); the same fit with 999 random permutations of the
labels, stopping where every decision is settled (``_pvalues.settled``, looks after 157 and
471), as before the shifts. Scenarios, each on ``--repetitions`` data sets: friedman1 (n =
2000, d = 20, noise 1; features 0-4 relevant, 5-19 a partial null) for power and the
family-wise error over the nulls; a noisier friedman1 (n = 1000, noise 8), where the tests
do not keep every relevant feature, for power; the global null (friedman1's y drawn apart
from X, n = 2000) for the size of the overall test and the family-wise error. CPU seconds
per fit, one thread.
"""

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed

from benchmarks._measure import one_thread, records_table, write_results

RESULTS = Path(__file__).parent / "results"
SCENARIOS = {  # rows, noise, y drawn apart from X
    "friedman1": (2000, 1.0, False),
    "noisy friedman1": (1000, 8.0, False),
    "global null": (2000, 1.0, True),
}
RULES = ("shifts", "permutations")


def one(scenario, repetition, rule):
    one_thread()
    from sklearn.datasets import make_friedman1

    from pkex_select import HSICShapleySelector, _pairgame, _shifts

    # Set on every call: the workers of joblib run many jobs each.
    _pairgame.uses_shifts = _shifts.uses_shifts if rule == "shifts" else (lambda *args: False)
    rows, noise, apart = SCENARIOS[scenario]
    X, y = make_friedman1(rows, 20, noise=noise, random_state=repetition)
    if apart:
        y = np.random.default_rng(repetition).permutation(y)
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = HSICShapleySelector(alpha=0.05, n_permutations=999, random_state=repetition)
        fitted.fit(X, y)
    seconds = time.process_time() - start
    kept = fitted.get_support()
    relevant = slice(0, 0) if apart else slice(0, 5)
    nulls = slice(0, 20) if apart else slice(5, 20)
    return {
        "scenario": scenario,
        "rule": rule,
        "relevant kept": np.nan if apart else kept[relevant].mean(),
        "any null kept": float(kept[nulls].any()),
        "overall rejected": float(fitted.pvalue_ <= 0.05),
        "permutations": fitted.n_permutations_,
        "seconds": seconds,
    }


def summary(records, repetitions):
    rows = []
    for scenario, (n_rows, _, apart) in SCENARIOS.items():
        for rule in RULES:
            mine = [r for r in records if r["scenario"] == scenario and r["rule"] == rule]
            kept = np.array([r["relevant kept"] for r in mine])
            fwer = np.array([r["any null kept"] for r in mine])
            overall = np.array([r["overall rejected"] for r in mine])
            fwer_error = fwer.std() / np.sqrt(fwer.size)
            rows.append(
                {
                    "scenario": scenario,
                    "n": n_rows,
                    "rule": rule,
                    "relevant kept": ""
                    if apart
                    else f"{kept.mean():.3f} ({kept.std() / np.sqrt(kept.size):.3f})",
                    "FWER over the nulls": f"{fwer.mean():.3f} ({fwer_error:.3f})",
                    "overall rejected": f"{overall.mean():.3f}",
                    "mean permutations": f"{np.mean([r['permutations'] for r in mine]):.0f}",
                    "mean CPU s": f"{np.mean([r['seconds'] for r in mine]):.2f}",
                }
            )
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repetitions", type=int, default=200)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    jobs = [(s, r, rule) for s in SCENARIOS for r in range(args.repetitions) for rule in RULES]
    records = Parallel(n_jobs=args.n_jobs)(delayed(one)(*job) for job in jobs)
    rows = summary(records, args.repetitions)
    write_results(
        args.out,
        "shifts",
        rows,
        "Circular shifts against random permutations",
        f"{args.repetitions} data sets per scenario, d = 20, alpha = 0.05 (maxT), 999 shifts "
        "or at most 999 permutations; standard errors in brackets. `python -m "
        f"benchmarks.games.shifts --repetitions {args.repetitions}`.",
        records_table(rows),
    )


if __name__ == "__main__":
    main()
