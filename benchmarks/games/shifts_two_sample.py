"""Power of the two-sample test with circular shifts against random permutations, where the
shifts are every shift there is (pooled n = 200, 199 of them), on the same data sets.

    python -m benchmarks.games.shifts_two_sample [--repetitions 600] [--n-jobs 2]

``MMDShapleyAttributor(n_permutations=199, alpha=0.05)`` on three scenarios of
``benchmarks.power`` with 100 samples each (d = 20 and 100), seeds 5000 on (not those of the
power tables): the overall test's rejection rate at 0.05 with 199 circular shifts of the
labels along a random order, and with 199 random permutations. On the same data sets the
difference comes from the permutations drawn alone, so the table also counts the data sets
only one rule rejects (a paired comparison: under no difference in power each is equally
likely to be the one).
"""

import argparse
import warnings
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed
from scipy.stats import binomtest

from benchmarks._measure import one_thread, records_table, write_results

RESULTS = Path(__file__).parent / "results"
SCENARIOS = (("one", 20), ("one", 100), ("variance", 20))
SAMPLES = 100  # per sample
PERMUTATIONS = 199
FIRST_SEED = 5000


def one(kind, n_features, seed, rule):
    one_thread()
    from benchmarks.power.__main__ import scenario_data
    from pkex_select import _pairgame, _shifts

    _pairgame.uses_shifts = _shifts.uses_shifts if rule == "shifts" else (lambda *args: False)
    X, labels, estimator = scenario_data("mmd", kind, n_features, SAMPLES, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = estimator(n_permutations=PERMUTATIONS, alpha=0.05, random_state=seed)
        return fitted.fit(X, labels).pvalue_ <= 0.05


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repetitions", type=int, default=600)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    seeds = range(FIRST_SEED, FIRST_SEED + args.repetitions)
    rows = []
    for kind, n_features in SCENARIOS:
        rejected = {
            rule: np.array(
                Parallel(n_jobs=args.n_jobs)(
                    delayed(one)(kind, n_features, seed, rule) for seed in seeds
                )
            )
            for rule in ("shifts", "permutations")
        }
        shifts_only = int(np.sum(rejected["shifts"] & ~rejected["permutations"]))
        permutations_only = int(np.sum(rejected["permutations"] & ~rejected["shifts"]))
        discordant = shifts_only + permutations_only
        rows.append(
            {
                "scenario": f"{kind}, d = {n_features}",
                "shifts": f"{rejected['shifts'].mean():.3f}",
                "permutations": f"{rejected['permutations'].mean():.3f}",
                "shifts only": shifts_only,
                "permutations only": permutations_only,
                "sign test p": f"{binomtest(shifts_only, discordant).pvalue:.3f}"
                if discordant
                else "",
            }
        )
        print(rows[-1], flush=True)
    write_results(
        args.out,
        "shifts-two-sample",
        rows,
        "Two-sample power: every circular shift against random permutations",
        f"{args.repetitions} data sets per scenario, {SAMPLES} samples each, "
        f"{PERMUTATIONS} shifts or random permutations, alpha = 0.05; rejection rates of the "
        "overall test, the data sets only one rule rejects, and the two-sided sign test of "
        "those. `python -m benchmarks.games.shifts_two_sample"
        + (f" --repetitions {args.repetitions}`." if args.repetitions != 600 else "`."),
        records_table(rows),
    )


if __name__ == "__main__":
    main()
