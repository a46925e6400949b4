"""False discovery rate and power of fdr= (model-X knockoffs) against the lasso statistic.

    python -m benchmarks.knockoffs [--repetitions 100] [--draws 1] [--games auto anova]
                                   [--designs ...] [--seed 0] [--n-jobs 2] [--out DIR]

Designs (the acceptance criteria of issue 33): AR(1) Gaussian features with rho = 0.5 and
0.8, d = 50, n = 500, 6 or 12 relevant features chosen at random per data set, noise N(0, 1):

- ``linear``: y = sum_r b_r x_r, |b_r| = 0.6 with random signs;
- ``nonlinear``: y = sum_r f_r(x_r), f cycling through sin, square, abs, step, tanh, cos;
- ``interaction``: y = 0.4 sum_r x_r + x_r1 x_r2 + x_r3 x_r4 (+ x_r5 x_r6 ...), pairs of the
  relevant features multiplied;
- ``near-copy``: nonlinear, rho = 0.5, 6 relevant, one null feature replaced by a
  0.98-correlated copy of a relevant one; scored by groups (``knockoff_groups="auto"``): a
  selected group is false when none of its features is relevant.

For each data set, one fit of ``HSICShapleySelector(fdr=..., n_knockoffs=DRAWS)`` per game
gives W for every draw; from the same knockoffs (``gaussian_knockoffs`` with the same seed),
the lasso coefficient-difference statistic ``|b_j| - |b_j~|`` of ``LassoCV`` on [X, X~]. Each
statistic is thresholded at q = 0.1 and 0.2 by knockoff+ on the first draw (the default,
``n_knockoffs=1``) and, with ``--draws`` above 1, by derandomised e-values over all
draws. On ``near-copy`` also
``alpha=0.05`` (the marginal test, maxT, 999 permutations). A rate p over R data sets has
standard error sqrt(p (1 - p) / R): 3 points at 0.1 and 4 at 0.2 for R = 100. Writes
``results/knockoffs.csv`` and ``results/knockoffs.md`` (``knockoffs-GAMES`` for other
``--games``, ``-drawsK`` appended for K > 1 draws); data sets are cached under
``--out``/cache per number of draws, and a cached one gains the games it lacks.
"""

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed
from sklearn.linear_model import LassoCV

from benchmarks._measure import progress, records_table, write_results
from pkex_select import HSICShapleySelector
from pkex_select.knockoffs import derandomised_selection, gaussian_knockoffs

RESULTS = Path(__file__).parent / "results"
N_SAMPLES, N_FEATURES = 500, 50
LEVELS = (0.1, 0.2)
RESPONSES = ("linear", "nonlinear", "interaction")
DESIGNS = tuple(
    f"{response}-rho{rho}-k{k}" for response in RESPONSES for rho in (0.5, 0.8) for k in (6, 12)
) + ("near-copy",)
# The data sets per design whose plain fit is timed too.
TIMED = 10
SHAPES = (np.sin, np.square, np.abs, lambda x: (x > 0).astype(float), np.tanh, np.cos)


def design_data(design, seed):
    """X, y, the relevant features, and the feature that copies one (or None)."""
    rng = np.random.default_rng(seed)
    if design == "near-copy":
        response, rho, k = "nonlinear", 0.5, 6
    else:
        response, rho_text, k_text = design.split("-")
        rho, k = float(rho_text[3:]), int(k_text[1:])
    covariance = rho ** np.abs(np.subtract.outer(np.arange(N_FEATURES), np.arange(N_FEATURES)))
    X = rng.multivariate_normal(np.zeros(N_FEATURES), covariance, size=N_SAMPLES)
    relevant = rng.choice(N_FEATURES, k, replace=False)
    if response == "linear":
        signal = X[:, relevant] @ (0.6 * rng.choice([-1.0, 1.0], k))
    elif response == "nonlinear":
        signal = sum(SHAPES[i % 6](X[:, j]) for i, j in enumerate(relevant))
    else:
        signal = 0.4 * X[:, relevant].sum(axis=1) + sum(
            X[:, relevant[i]] * X[:, relevant[i + 1]] for i in range(0, k, 2)
        )
    copy = None
    if design == "near-copy":
        copy = int(rng.choice(np.setdiff1d(np.arange(N_FEATURES), relevant)))
        X[:, copy] = 0.98 * X[:, relevant[0]] + np.sqrt(1 - 0.98**2) * rng.normal(size=N_SAMPLES)
    y = signal + rng.normal(size=N_SAMPLES)
    return X, y, relevant, copy


def lasso_statistics(X, y, draws, groups, seed):
    """|b_j| - |b_j~| of LassoCV on the standardised [X, X~], summed over each group."""
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    statistics = []
    for knockoff in draws:
        lasso = LassoCV(cv=5, random_state=seed, n_jobs=1).fit(np.hstack([Z, knockoff]), y)
        magnitude = np.abs(lasso.coef_)
        statistics.append(np.bincount(groups, magnitude[: X.shape[1]] - magnitude[X.shape[1] :]))
    return np.array(statistics)


def _statistic_of(game, X, y, draws, seed):
    """W per draw of the selector in ``game``, its groups, the statistic each draw used, and
    the fit's CPU seconds."""
    start = time.process_time()
    selector = HSICShapleySelector(
        fdr=0.2, n_knockoffs=draws, value_function=game, random_state=seed
    ).fit(X, y)
    seconds = time.process_time() - start
    return (
        selector.knockoff_statistics_.tolist(),
        selector.knockoff_groups_.tolist(),
        selector.knockoff_value_functions_.tolist(),
        seconds,
    )


def run_task(design, seed, args):
    """One data set's statistics; cached, and a cached one gains the games it lacks."""
    cache = args.out / "cache" / design / f"{seed}-draws{args.draws}.json"
    X, y, relevant, copy = design_data(design, seed)
    if cache.exists():
        record = json.loads(cache.read_text())
        missing = [game for game in args.games if game not in record["W"]]
        if not missing:
            return record
    else:
        record, missing = None, list(args.games)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if record is None:
            record = {"relevant": relevant.tolist(), "copy": copy, "W": {}, "used": {}}
            record["seconds"] = {}
            if seed < args.seed + TIMED:
                start = time.process_time()
                HSICShapleySelector(n_features_to_select=6, random_state=seed).fit(X, y)
                record["seconds"]["plain fit"] = time.process_time() - start
            if design == "near-copy":
                tested = HSICShapleySelector(alpha=0.05, random_state=seed).fit(X, y)
                record["alpha"] = np.flatnonzero(tested.get_support()).tolist()
        for game in missing:
            W, groups, used, seconds = _statistic_of(game, X, y, args.draws, seed)
            record["W"][game], record["groups"], record["used"][game] = W, groups, used
            record["seconds"][game] = seconds
        if "lasso" not in record["W"]:
            draws = gaussian_knockoffs(X, groups="auto", n_draws=args.draws, random_state=seed)
            groups = np.asarray(record["groups"])
            record["W"]["lasso"] = lasso_statistics(X, y, draws, groups, seed).tolist()
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(record))
    return record


def score(selected_groups, groups, relevant):
    """False discovery proportion and power over groups (a group is relevant when it holds a
    relevant feature)."""
    relevant_groups = np.unique(groups[relevant])
    false = np.setdiff1d(selected_groups, relevant_groups).size
    found = np.intersect1d(selected_groups, relevant_groups).size
    return false / max(1, len(selected_groups)), found / relevant_groups.size


def summarise(records, design, statistic, rule, level):
    fdps, powers, copy_found = [], [], []
    for record in records:
        groups = np.asarray(record["groups"])
        W = np.asarray(record["W"][statistic])
        if rule == "knockoff+":
            selected = np.flatnonzero(derandomised_selection(W[:1], level)[0])
        else:
            selected = np.flatnonzero(derandomised_selection(W, level, level / 2)[0])
        fdp, power = score(selected, groups, np.asarray(record["relevant"]))
        fdps.append(fdp)
        powers.append(power)
        if record["copy"] is not None:
            copy_found.append(groups[record["relevant"][0]] in selected)
    row = {
        "design": design,
        "statistic": statistic,
        "rule": rule,
        "q": level,
        "fdr": round(float(np.mean(fdps)), 3),
        "fdr_se": round(float(np.std(fdps) / np.sqrt(len(fdps))), 3),
        "power": round(float(np.mean(powers)), 3),
        "copy_group_found": round(float(np.mean(copy_found)), 3) if copy_found else "",
        # The share of first draws whose statistic was the lasso's (value_function="auto").
        "lasso_chosen": (
            round(float(np.mean([r["used"][statistic][0] == "lasso" for r in records])), 3)
            if statistic in records[0]["used"]
            else ""
        ),
        "repetitions": len(records),
    }
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repetitions", type=int, default=100)
    parser.add_argument("--draws", type=int, default=1)
    parser.add_argument("--games", nargs="+", default=["auto"])
    parser.add_argument("--designs", nargs="+", default=list(DESIGNS), choices=DESIGNS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    jobs = [(d, args.seed + r) for d in args.designs for r in range(args.repetitions)]
    results = Parallel(n_jobs=args.n_jobs, return_as="generator_unordered")(
        delayed(lambda job: (job, run_task(*job, args)))(job) for job in jobs
    )
    records = dict(progress(results, total=len(jobs), desc="knockoffs", file=sys.stderr))
    rows = []
    for design in args.designs:
        runs = [records[(design, args.seed + r)] for r in range(args.repetitions)]
        for statistic in [*args.games, "lasso"]:
            rules = (
                ("knockoff+",) if args.draws == 1 else ("knockoff+", f"e-values of {args.draws}")
            )
            for rule in rules:
                for level in LEVELS:
                    rows.append(summarise(runs, design, statistic, rule, level))
        if design == "near-copy":
            alpha_rows = [
                score(
                    np.unique(np.asarray(r["groups"])[r["alpha"]]),
                    np.asarray(r["groups"]),
                    np.asarray(r["relevant"]),
                )
                for r in runs
            ]
            rows.append(
                {
                    "design": design,
                    "statistic": "alpha=0.05 (ANOVA game, maxT)",
                    "rule": "marginal test",
                    "q": "",
                    "fdr": round(float(np.mean([f for f, _ in alpha_rows])), 3),
                    "fdr_se": "",
                    "power": round(float(np.mean([p for _, p in alpha_rows])), 3),
                    "copy_group_found": "",
                    "lasso_chosen": "",
                    "repetitions": len(runs),
                }
            )
    timed = [r for r in records.values() if "plain fit" in r["seconds"]]
    times = {
        key: float(np.median([r["seconds"][key] for r in timed]))
        for key in [*args.games, "plain fit"]
    }
    plain = times.pop("plain fit")
    # A fit with fdr is a plain fit (the values on X) and then the draws.
    per_draw = {game: (seconds - plain) / args.draws for game, seconds in times.items()}
    note = (
        f"`python -m benchmarks.knockoffs --repetitions {args.repetitions} --draws "
        f"{args.draws} --games {' '.join(args.games)} --designs {' '.join(args.designs)}`. "
        f"CPU seconds per knockoff draw (the fit with fdr less a plain fit, medians over "
        f"the first {TIMED} data sets of each design): "
        + ", ".join(
            f"{game} {seconds:.2f} ({seconds / plain:.1f}x)" for game, seconds in per_draw.items()
        )
        + f", against a plain fit of the selector, {plain:.2f} s."
    )
    table = records_table(rows)
    name = "knockoffs" if args.games == ["auto"] else "knockoffs-" + "-".join(args.games)
    if args.draws > 1:
        name += f"-draws{args.draws}"
    write_results(args.out, name, rows, "Knockoffs: FDR and power", note, table)


if __name__ == "__main__":
    main()
