"""The overall tests of the ANOVA and baseline games on the power benchmark's 41 scenarios.

    python -m benchmarks.games.overall [--repetitions 100] [--permutations 199]
                                       [--seed 1000] [--n-jobs 2] [--out DIR]

The same data sets (``benchmarks.power.data_rng``) and permutation counts as the committed
``benchmarks/power/results/power.csv`` (``--seed 1000``), so the ``baseline`` column here
reproduces its ``pkex`` column and the standard tests there are the comparison for both.
Per scenario and game: the rejection rate of ``pvalue_`` at alpha = 0.05 (power, or size
under the null) and, under the null, the family-wise error of ``adjusted_pvalues_``.
Writes ``results/overall.csv`` and ``results/overall.md``; cached under ``--out``/cache.
"""

import argparse
import csv
import json
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed

from benchmarks._measure import markdown_table, write_results
from benchmarks.power.__main__ import ALPHA, scenario_data, scenarios

RESULTS = Path(__file__).parent / "results"
POWER_CSV = Path(__file__).resolve().parents[1] / "power" / "results" / "power.csv"
GAMES = ("anova", "baseline")


def one_test(statistic, kind, d, n, seed, n_permutations, game):
    X, target, estimator = scenario_data(statistic, kind, d, n, seed)
    fitted = estimator(n_permutations=n_permutations, value_function=game, random_state=seed).fit(
        X, target
    )
    return fitted.pvalue_, bool(np.any(fitted.adjusted_pvalues_ <= ALPHA))


def cache_name(job, game, repetitions, n_permutations, seed):
    statistic, kind, d, n = job
    return f"{statistic}-{kind}-d{d}-n{n}-{game}-r{repetitions}-p{n_permutations}-s{seed}.json"


def run(job, game, repetitions, n_permutations, seed, cache, n_jobs):
    statistic, kind, d, n = job
    path = cache / cache_name(job, game, repetitions, n_permutations, seed)
    if path.exists():
        return json.loads(path.read_text())
    outcomes = Parallel(n_jobs=n_jobs)(
        delayed(one_test)(statistic, kind, d, n, seed + r, n_permutations, game)
        for r in range(repetitions)
    )
    row = {
        "statistic": statistic,
        "scenario": kind,
        "d": d,
        "n": n,
        "game": game,
        "rejection_rate": float(np.mean([p <= ALPHA for p, _ in outcomes])),
        "fwer_adjusted": float(np.mean([f for _, f in outcomes])) if kind == "null" else "",
    }
    cache.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(row))
    return row


def standard_tests():
    """The better of hyppo and the joint-median test per scenario, from the committed run."""
    best = {}
    if not POWER_CSV.exists():
        return best
    with POWER_CSV.open() as handle:
        for row in csv.DictReader(handle):
            if row["method"] in ("hyppo", "joint-median"):
                key = (row["statistic"], row["scenario"], int(row["d"]), int(row["n"]))
                best[key] = max(best.get(key, 0.0), float(row["rejection_rate"]))
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=100)
    parser.add_argument("--permutations", type=int, default=199)
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--statistics",
        nargs="+",
        default=["mmd", "hsic"],
        choices=["mmd", "hsic"],
        help="which scenarios to run, in this order",
    )
    parser.add_argument(
        "--cached-only",
        action="store_true",
        help="tabulate the scenarios already in the cache, run none",
    )
    args = parser.parse_args(argv)
    best = standard_tests()
    rows, table = [], []
    jobs = [job for statistic in args.statistics for job in scenarios(False) if job[0] == statistic]
    for job in jobs:
        names = [
            cache_name(job, game, args.repetitions, args.permutations, args.seed) for game in GAMES
        ]
        if args.cached_only and not all((args.out / "cache" / n).exists() for n in names):
            continue
        by_game = {
            game: run(
                job,
                game,
                args.repetitions,
                args.permutations,
                args.seed,
                args.out / "cache",
                args.n_jobs,
            )
            for game in GAMES
        }
        rows += by_game.values()
        anova, baseline = by_game["anova"], by_game["baseline"]
        standard = best.get(job, float("nan"))
        table.append(
            [
                job[0].upper(),
                job[1],
                job[2],
                job[3],
                f"{anova['rejection_rate']:.2f}",
                f"{baseline['rejection_rate']:.2f}",
                f"{anova['rejection_rate'] - baseline['rejection_rate']:+.2f}",
                f"{standard:.2f}",
                f"{anova['rejection_rate'] - standard:+.2f}",
                anova["fwer_adjusted"]
                if anova["fwer_adjusted"] == ""
                else f"{anova['fwer_adjusted']:.2f}",
            ]
        )
        print(table[-1], flush=True)
    header = [
        "test",
        "scenario",
        "d",
        "n",
        "anova",
        "baseline",
        "anova - baseline",
        "best standard (committed)",
        "anova - standard",
        "anova maxT FWER (null)",
    ]
    write_results(
        args.out,
        "overall",
        rows,
        "The overall test in the ANOVA and baseline games",
        f"`python -m benchmarks.games.overall --repetitions {args.repetitions} --permutations "
        f"{args.permutations} --seed {args.seed}`: rejection rates at alpha = {ALPHA} over "
        f"{args.repetitions} data sets each (Monte-Carlo standard error up to "
        f"{0.5 / np.sqrt(args.repetitions):.3f}); the same data sets as "
        "benchmarks/power/results/power.csv, whose better standard test (hyppo or the "
        "joint-median Gaussian test) is the last comparison.",
        markdown_table(header, table)
        + (
            "\nTabulated with --cached-only: scenarios not listed were not run.\n"
            if args.cached_only
            else ""
        ),
    )


if __name__ == "__main__":
    main()
