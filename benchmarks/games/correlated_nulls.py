"""Family-wise error when two null features are copies of each other.

    python -m benchmarks.games.correlated_nulls [--repetitions 200] [--rows 300]
                                                [--shifts-only] [--n-jobs 2]
                                                [--kinds ...] [--games ...]

The tests of ``alpha=`` permute y, which makes every feature independent of it at once (the
global null). A feature y does not depend on can still have a positive value in the full
ANOVA game beside relevant ones: with two null features that copy each other, the product of
their centred factors is positive on average, and its interaction with a relevant feature's
factor carries that feature's dependence on y into both nulls' values. Permuting y removes
it, so the permuted values miss it. The tests' game, "pairwise_anova", keeps only the terms
of at most two features, whose means are the same observed and permuted; both games are run
on the same data sets. Here: y = x0 + |x1| + N(0, 1), every other column a null;
the last two independent ("independent"), a near copy (``x_last = x_prev + 0.3 e``) or an
exact copy; d = 6 (ANOVA weight 1) and d = 20 (weight 0.3); n = ``--rows``. The bias grows
with n against the null's spread. ``alpha=0.05`` with 199 circular
shifts or random permutations (maxT): the share of data sets on which any null is kept (the
family-wise error over the nulls), the pair alone, and x0 and x1 kept.
"""

import argparse
import itertools
import warnings
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed

from benchmarks._measure import one_thread, records_table, write_results

RESULTS = Path(__file__).parent / "results"
KINDS = ("independent", "near copy", "exact copy")
RULES = ("shifts", "permutations")
# The tests' game ("auto") and the full ANOVA game they used before.
GAMES = ("pairwise_anova", "anova")


def one(kind, n_features, repetition, rule, n_rows, game):
    one_thread()
    from pkex_select import HSICShapleySelector, _pairgame, _shifts

    _pairgame.uses_shifts = _shifts.uses_shifts if rule == "shifts" else (lambda *args: False)
    rng = np.random.default_rng([repetition, n_features, KINDS.index(kind)])
    X = rng.standard_normal((n_rows, n_features))
    if kind == "near copy":
        X[:, -1] = X[:, -2] + 0.3 * rng.standard_normal(n_rows)
    elif kind == "exact copy":
        X[:, -1] = X[:, -2]
    y = X[:, 0] + np.abs(X[:, 1]) + rng.standard_normal(n_rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = HSICShapleySelector(
            alpha=0.05, n_permutations=199, random_state=repetition, value_function=game
        )
        kept = fitted.fit(X, y).get_support()
    return {
        "kind": kind,
        "d": n_features,
        "rule": rule,
        "game": game,
        "any null kept": float(kept[2:].any()),
        "pair kept": float(kept[-2:].any()),
        "relevant kept": kept[:2].mean(),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repetitions", type=int, default=200)
    parser.add_argument("--rows", type=int, default=300)
    parser.add_argument("--shifts-only", action="store_true", help="no random permutations")
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    parser.add_argument("--games", nargs="+", default=list(GAMES), choices=GAMES)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    rules = RULES[:1] if args.shifts_only else RULES
    jobs = [
        (kind, d, r, rule, args.rows, game)
        for kind in args.kinds
        for d in (6, 20)
        for rule in rules
        for game in args.games
        for r in range(args.repetitions)
    ]
    records = Parallel(n_jobs=args.n_jobs)(delayed(one)(*job) for job in jobs)
    rows = []
    for kind in args.kinds:
        for d in (6, 20):
            for rule, game in itertools.product(rules, args.games):
                mine = [
                    r
                    for r in records
                    if (r["kind"], r["d"], r["rule"], r["game"]) == (kind, d, rule, game)
                ]
                fwer = np.array([r["any null kept"] for r in mine])
                rows.append(
                    {
                        "nulls' last two": kind,
                        "d": d,
                        "rule": rule,
                        "game": game,
                        "FWER over the nulls": f"{fwer.mean():.3f} "
                        f"({fwer.std() / np.sqrt(fwer.size):.3f})",
                        "pair kept": f"{np.mean([r['pair kept'] for r in mine]):.3f}",
                        "relevant kept": f"{np.mean([r['relevant kept'] for r in mine]):.3f}",
                    }
                )
    # Options that leave out kinds or games: in the command and in the results' name.
    subsets = [
        (option, chosen)
        for option, chosen, every in (("kinds", args.kinds, KINDS), ("games", args.games, GAMES))
        if tuple(chosen) != every
    ]
    options = (
        ("" if args.rows == 300 else f" --rows {args.rows}")
        + (" --shifts-only" if args.shifts_only else "")
        + "".join(f" --{option} {' '.join(chosen)}" for option, chosen in subsets)
    )
    name = (
        "correlated_nulls"
        + ("" if args.rows == 300 else f"-{args.rows}")
        + "".join(f"-{'-'.join(chosen)}" for _, chosen in subsets).replace(" ", "_")
    )
    write_results(
        args.out,
        name,
        rows,
        f"Family-wise error when two null features copy each other, n = {args.rows}",
        f"{args.repetitions} data sets per row, n = {args.rows}, alpha = 0.05 (maxT), 199 "
        "shifts" + ("" if args.shifts_only else " or random permutations") + "; the "
        "standard error in brackets. `python -m benchmarks.games.correlated_nulls "
        f"--repetitions {args.repetitions}{options}`.",
        records_table(rows),
    )


if __name__ == "__main__":
    main()
