"""Circular shifts of the labels against random permutations, on the same data sets.

    python -m benchmarks.games.shifts [--repetitions 200] [--n-jobs 2]
    python -m benchmarks.games.shifts --size-check [--repetitions 1000]

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

``--size-check``: the global null at n = 300 with 199 shifts or permutations, on more data
sets (1000 by default), for the size alone: how often the overall p-value and the smallest
adjusted p-value are at most 0.01, 0.05 and 0.1 (``shifts-size.md``).
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
    "global null, n = 300": (300, 1.0, True),
}
# The size check's permutations: fewer than its 300 samples, so that shifts are drawn.
SIZE_CHECK_PERMUTATIONS = 199
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
    n_permutations = SIZE_CHECK_PERMUTATIONS if rows < 1000 else 999
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = HSICShapleySelector(
            alpha=0.05, n_permutations=n_permutations, random_state=repetition
        )
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
        "overall p": fitted.pvalue_,
        "smallest adjusted p": fitted.adjusted_pvalues_.min(),
        "permutations": fitted.n_permutations_,
        "seconds": seconds,
    }


def size_summary(records):
    rows = []
    for rule in RULES:
        mine = [r for r in records if r["rule"] == rule]
        if not mine:
            continue
        row = {"rule": rule, "data sets": len(mine)}
        for name in ("overall p", "smallest adjusted p"):
            p = np.array([r[name] for r in mine])
            for level in (0.01, 0.05, 0.1):
                share = np.mean(p <= level)
                row[f"{name} <= {level:g}"] = (
                    f"{share:.3f} ({np.sqrt(share * (1 - share) / p.size):.3f})"
                )
        rows.append(row)
    return rows


def summary(records):
    rows = []
    for scenario, (n_rows, _, apart) in SCENARIOS.items():
        for rule in RULES:
            mine = [r for r in records if r["scenario"] == scenario and r["rule"] == rule]
            if not mine:
                continue
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
    parser.add_argument("--repetitions", type=int, default=None)
    parser.add_argument("--size-check", action="store_true")
    parser.add_argument(
        "--size-scenario",
        default="global null, n = 300",
        choices=[name for name, (_, _, apart) in SCENARIOS.items() if apart],
    )
    parser.add_argument("--shifts-only", action="store_true", help="no random permutations")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    scenarios = [args.size_scenario] if args.size_check else list(SCENARIOS)[:3]
    rules = RULES[:1] if args.shifts_only else RULES
    repetitions = args.repetitions or (1000 if args.size_check else 200)
    jobs = [(s, r, rule) for s in scenarios for r in range(repetitions) for rule in rules]
    records = Parallel(n_jobs=args.n_jobs)(delayed(one)(*job) for job in jobs)
    if args.size_check:
        n_rows = SCENARIOS[args.size_scenario][0]
        n_permutations = SIZE_CHECK_PERMUTATIONS if n_rows < 1000 else 999
        options = (
            ""
            if args.size_scenario == "global null, n = 300"
            else (f" --size-scenario '{args.size_scenario}'")
        )
        options += " --shifts-only" if args.shifts_only else ""
        rows = size_summary(records)
        write_results(
            args.out,
            "shifts-size" + ("" if n_rows == 300 else f"-{n_rows}"),
            rows,
            (
                "Circular shifts"
                if args.shifts_only
                else "Circular shifts against random permutations"
            )
            + f": size at n = {n_rows}",
            f"The global null (friedman1's y drawn apart from X, n = {n_rows}, d = 20), "
            f"{repetitions} data sets, alpha = 0.05 (maxT), {n_permutations} shifts"
            + ("" if args.shifts_only else " or at most as many random permutations")
            + "; the share of data sets with each p-value at most the level, its standard "
            "error in brackets. `python -m benchmarks.games.shifts --size-check "
            f"--repetitions {repetitions}{options}`.",
            records_table(rows),
        )
        return
    rows = summary(records)
    write_results(
        args.out,
        "shifts",
        rows,
        "Circular shifts against random permutations",
        f"{repetitions} data sets per scenario, d = 20, alpha = 0.05 (maxT), 999 shifts "
        "or at most 999 permutations; standard errors in brackets. `python -m "
        f"benchmarks.games.shifts --repetitions {repetitions}`.",
        records_table(rows),
    )


if __name__ == "__main__":
    main()
