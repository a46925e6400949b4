"""Which tests depend on the features' units: the local mixture alternative, raw and standardised.

    python -m benchmarks.power.units [--repetitions 100] [--permutations 199] [--seed 1000]
                                     [--n-jobs 2] [--out DIR]

The power benchmark's ``mixture`` scenario (two samples of 150, d = 20; 10% of the second
sample shifted by 3 sd in features 0 and 1) is where hyppo's MMD has the most power. hyppo
uses a Gaussian kernel on the raw data with the median joint distance as its bandwidth, so
a feature's weight in the kernel grows with its variance, and here the shift itself raises the
variance of the two shifted features in the pooled sample (by 43%). The same test on the
standardised data, and the kernels of pkex-select (each feature at its own median distance,
which does not change when a feature is rescaled), do not get that weight. Rows, each a
permutation test at alpha = 0.05 on the same data sets as the power benchmark:

- ``pkex``: ``MMDShapleyAttributor().pvalue_`` (the default overall test);
- ``hyppo (raw units)``: ``hyppo.ksample.MMD``, as in the power benchmark;
- ``hyppo (standardised)``: the same on each feature divided by its standard deviation;
- ``hyppo (one feature x10)``: the same on the raw data with a noise feature in other units
  (multiplied by 10), which a unit-free test must not notice;
- ``joint-median``: the power benchmark's Gaussian kernel on standardised data.

Writes ``results/units.csv`` and ``results/units.md``.
"""

import argparse
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed

from benchmarks._measure import markdown_table, write_results
from benchmarks.power.__main__ import (
    ALPHA,
    hyppo_pvalue,
    joint_median_pvalue,
    scenario_data,
)

RESULTS = Path(__file__).parent / "results"
SCENARIOS = (("mmd", "mixture", 20, 150),)  # the size of every test: the power benchmark


def one_data_set(scenario, seed, n_permutations):
    X, groups, estimator = scenario_data(*scenario, seed)
    rescaled = X.copy()
    rescaled[:, -1] *= 10.0
    standardised = (X - X.mean(axis=0)) / X.std(axis=0)
    fitted = estimator(n_permutations=n_permutations, random_state=seed).fit(X, groups)
    return {
        "pkex": fitted.pvalue_,
        "hyppo (raw units)": hyppo_pvalue(X, groups, "mmd", n_permutations, seed),
        "hyppo (standardised)": hyppo_pvalue(standardised, groups, "mmd", n_permutations, seed),
        "hyppo (one feature x10)": hyppo_pvalue(rescaled, groups, "mmd", n_permutations, seed),
        "joint-median": joint_median_pvalue(
            X, groups, "mmd", n_permutations, np.random.default_rng(seed)
        ),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=100)
    parser.add_argument("--permutations", type=int, default=199)
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    rows = []
    for scenario in SCENARIOS:
        outcomes = Parallel(n_jobs=args.n_jobs)(
            delayed(one_data_set)(scenario, args.seed + r, args.permutations)
            for r in range(args.repetitions)
        )
        for method in outcomes[0]:
            rate = float(np.mean([o[method] <= ALPHA for o in outcomes]))
            rows.append(
                {
                    "scenario": scenario[1],
                    "d": scenario[2],
                    "n": scenario[3],
                    "method": method,
                    "rejection_rate": rate,
                    "standard_error": float(np.sqrt(rate * (1 - rate) / args.repetitions)),
                    "repetitions": args.repetitions,
                }
            )
    table = markdown_table(
        ["scenario", "d", "n per sample", "test", "rejection rate"],
        [
            [
                r["scenario"],
                r["d"],
                r["n"],
                r["method"],
                f"{r['rejection_rate']:.2f} +- {r['standard_error']:.2f}",
            ]
            for r in rows
        ],
    )
    write_results(
        args.out,
        "units",
        rows,
        "Tests and the features' units",
        f"`python -m benchmarks.power.units --repetitions {args.repetitions} --permutations "
        f"{args.permutations} --seed {args.seed}`; alpha = {ALPHA}; rates over "
        f"{args.repetitions} data sets, plus or minus one Monte-Carlo standard error.",
        table,
    )


if __name__ == "__main__":
    main()
