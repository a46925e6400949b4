"""Which game's values and per-feature tests say what users read: baseline, observational, ANOVA.

    python -m benchmarks.games [--repetitions 100] [--null-repetitions 200]
                               [--permutations 999] [--seed 0] [--n-jobs 2] [--out DIR]
                               [--games anova pairwise_anova baseline observational
                                        marginal oracle] [--keep-others]
                               [--quick]

Scenarios where a dominant feature stands beside moderate ones, and partial nulls:

- ``friedman1``: ``make_friedman1(n_samples=800, n_features=20, noise=1)``; features 0-4
  relevant (x2 adds 20 (x2 - 0.5)^2, about 9% of the variance), 5-19 noise;
- ``mixed``: y = 3 x0 + sin(2 x1) + 0.5 x2^2 + 0.3 x3 + e, n = 600, d = 20, x5 a noisy copy of
  x0 (relevant marginally: the tests are marginal, not conditional);
- ``hsic-partial-null``: y = x0 + x1^2 + e with 18 noise features, n = 200;
- ``mmd-strong-weak``: two samples of 150, d = 20, the second shifted by 1 sd in feature 0
  and 0.4 sd in features 1 and 2;
- ``mmd-partial-null``: two samples of 150, d = 20, features 0 and 1 shifted by 0.5 sd;
- ``block-categorical``: n = 3000, y = sin(2 x0) + 0.5 x1^2 + 0.3 e, four more numeric noise
  columns and two random categorical columns with 10 and 50 levels, ``estimate="block"``;
- ``three-way``: n = 600, d = 6, y = x0 x1 x2 + 0.5 e: an interaction of three features
  whose spread still depends on each alone;
- ``three-way-xor``: n = 600, d = 6, y = sign(x0 x1 x2) (labels): a pure interaction of
  three features, no two of which tell anything about y, what "pairwise_anova" gives up.

For each game (``value_function``) and data set, one fit with the defaults otherwise,
``--permutations`` permutations and ``alpha=0.05`` (maxT): how often each relevant feature is
kept, how often any independent-null feature is kept (the family-wise error over them), and
the values as shares of the largest absolute value. The observational game is left out of
the MMD scenarios: its removed factors change with the labels, so each permutation costs an
engine pass (30 s per fit at 999), and its v(empty) already holds every feature's marginal
drift, so its values do not point at drifted features (the user guide). Beside the games:
``marginal``, each feature's own HSIC or MMD tested alone (the same kernels, permutations
and maxT), and on ``mixed`` ``oracle``, a Pearson test of y against each feature's true
term with Bonferroni (what a test that knew every term's shape could do).
``block-categorical`` reports how often
both categorical columns rank below every relevant numeric feature (no permutations). A rate
p over R data sets has Monte-Carlo standard error sqrt(p (1 - p) / R): 1.5 points at 0.05 and
3 points at 0.9 for R = 100, 1.5 at 0.05 for R = 200. Writes ``results/games.csv`` and
``results/games.md``; each scenario and game is cached under ``--out``/cache.
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed
from scipy.stats import pearsonr
from sklearn.datasets import make_friedman1
from sklearn.metrics.pairwise import rbf_kernel

from benchmarks._measure import markdown_table, write_results
from pkex_select import HSICShapleySelector, MMDShapleyAttributor
from pkex_select._pvalues import feature_statistics, maxt_pvalues
from pkex_select._validation import standardise
from pkex_select.kernels import gamma_from_bandwidth

RESULTS = Path(__file__).parent / "results"
ALPHA = 0.05
GAMES = ("anova", "pairwise_anova", "baseline", "observational", "marginal", "oracle")
# The true term of each feature of y in the scenarios the oracle test runs on (others: x_j).
ORACLE_TERMS = {"mixed": {1: lambda x: np.sin(2 * x), 2: np.square}}
# scenario -> (relevant features, independent-null features, repetitions key)
SCENARIOS = {
    "friedman1": (range(5), range(5, 20), "repetitions"),
    "mixed": ([0, 1, 2, 3, 5], [4] + list(range(6, 20)), "repetitions"),
    "hsic-partial-null": ([0, 1], range(2, 20), "null_repetitions"),
    "mmd-strong-weak": ([0, 1, 2], range(3, 20), "repetitions"),
    "mmd-partial-null": ([0, 1], range(2, 20), "null_repetitions"),
    "block-categorical": ([0, 1], [2, 3, 4, 5, 6, 7], "block_repetitions"),
    "three-way": ([0, 1, 2], [3, 4, 5], "repetitions"),
    "three-way-xor": ([0, 1, 2], [3, 4, 5], "repetitions"),
}


def make_data(scenario, seed):
    rng = np.random.default_rng([seed, len(scenario)])
    if scenario == "friedman1":
        X, y = make_friedman1(n_samples=800, n_features=20, noise=1.0, random_state=seed)
        return X, y
    if scenario == "mixed":
        X = rng.normal(size=(600, 20))
        X[:, 5] = X[:, 0] + 0.5 * rng.normal(size=600)
        y = 3 * X[:, 0] + np.sin(2 * X[:, 1]) + 0.5 * X[:, 2] ** 2 + 0.3 * X[:, 3]
        return X, y + rng.normal(size=600)
    if scenario == "hsic-partial-null":
        X = rng.normal(size=(200, 20))
        return X, X[:, 0] + X[:, 1] ** 2 + rng.normal(size=200)
    if scenario in ("mmd-strong-weak", "mmd-partial-null"):
        X = rng.normal(size=(300, 20))
        shift = [1.0, 0.4, 0.4] if scenario == "mmd-strong-weak" else [0.5, 0.5]
        X[150:, : len(shift)] += shift
        return X, np.repeat(["p", "q"], 150)
    if scenario == "three-way":
        X = rng.normal(size=(600, 6))
        return X, X[:, 0] * X[:, 1] * X[:, 2] + 0.5 * rng.normal(size=600)
    if scenario == "three-way-xor":
        X = rng.normal(size=(600, 6))
        return X, np.sign(X[:, 0] * X[:, 1] * X[:, 2]).astype(int)
    X = rng.normal(size=(3000, 6))
    y = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] ** 2 + 0.3 * rng.normal(size=3000)
    columns = [X[:, j] for j in range(6)] + [
        rng.integers(0, levels, 3000).astype(str) for levels in (10, 50)
    ]
    return np.array(columns, dtype=object).T, y


def marginal_fit(X, target, mmd, seed, n_permutations):
    """Each feature tested alone: its HSIC (or MMD) with the selector's kernels at every
    scale, the same statistic over scales and maxT correction, ``n_permutations`` of the
    target: the reference for the per-feature tests, a feature's own dependence with no
    other feature in its kernel."""
    estimator = MMDShapleyAttributor if mmd else HSICShapleySelector
    fitted = estimator(random_state=seed).fit(X, target)  # its bandwidths and scales
    data = standardise(np.asarray(X, dtype=float))[0]
    centred = np.stack(
        [
            np.stack(
                [
                    _centre(rbf_kernel(column[:, None], gamma=g / s**2))
                    for column, g in zip(data.T, fitted.gammas_)
                ]
            )
            for s in fitted.scales_
        ]
    ).reshape(len(fitted.scales_) * X.shape[1], -1)
    n = len(X)
    if mmd:
        first = target == target[0]
        weights = np.where(first, 1 / first.sum(), -1 / (~first).sum())
        target_gram = np.outer(weights, weights)
    else:
        y = standardise(np.asarray(target, dtype=float)[:, None])[0][:, 0]
        gamma = gamma_from_bandwidth("rbf", fitted.target_bandwidth_)[0]
        target_gram = rbf_kernel(y[:, None], gamma=gamma)
    rng = np.random.default_rng(seed)
    orders = [np.arange(n)] + [rng.permutation(n) for _ in range(n_permutations)]
    statistics = np.concatenate(
        [
            np.stack([target_gram[np.ix_(o, o)].ravel() for o in orders[i : i + 16]]) @ centred.T
            for i in range(0, len(orders), 16)
        ]
    ).reshape(len(orders), len(fitted.scales_), X.shape[1])
    tested = feature_statistics(np.moveaxis(statistics, 1, 0))
    adjusted = maxt_pvalues(tested)
    return adjusted, statistics[0, 0]


def oracle_fit(X, y, terms):
    """Each feature's true term of y (``terms[j]``, the identity for the others) tested by
    Pearson correlation with y, Bonferroni over the features: what a marginal test that
    knew the shape of every term could do. Returns the adjusted p-values and r^2."""
    tests = [pearsonr(terms.get(j, lambda x: x)(X[:, j]), y) for j in range(X.shape[1])]
    pvalues = np.array([t.pvalue for t in tests])
    return np.minimum(1.0, pvalues * X.shape[1]), np.array([t.statistic**2 for t in tests])


def _centre(K):
    return K - K.mean(axis=0) - K.mean(axis=1)[:, None] + K.mean()


def one_fit(scenario, game, seed, n_permutations):
    X, y = make_data(scenario, seed)
    relevant, nulls, _ = SCENARIOS[scenario]
    relevant, nulls = list(relevant), list(nulls)
    start = time.perf_counter()
    if scenario == "block-categorical":
        fitted = HSICShapleySelector(
            estimate="block", value_function=game, categorical_features=[6, 7], random_state=seed
        ).fit(X, y)
        ranks = fitted.ranking_
        return {
            "seconds": time.perf_counter() - start,
            "categorical_below": bool(ranks[[6, 7]].min() > ranks[relevant].max()),
            "shares": (fitted.shapley_values_ / np.abs(fitted.shapley_values_).max()).tolist(),
        }
    if game in ("marginal", "oracle"):  # a test of each feature alone, not a game
        adjusted, statistic = (
            marginal_fit(X, y, scenario.startswith("mmd"), seed, n_permutations)
            if game == "marginal"
            else oracle_fit(X, y, ORACLE_TERMS[scenario])
        )
        kept = adjusted <= ALPHA
        return {
            "seconds": time.perf_counter() - start,
            "kept": kept[relevant].tolist(),
            "any_null_kept": bool(kept[nulls].any()),
            "shares": (statistic / np.abs(statistic).max()).tolist(),
            "pvalue": float(adjusted.min()),
        }
    estimator = MMDShapleyAttributor if scenario.startswith("mmd") else HSICShapleySelector
    fitted = estimator(
        value_function=game, n_permutations=n_permutations, alpha=ALPHA, random_state=seed
    ).fit(X, y)
    kept = fitted.get_support()
    values = fitted.shapley_values_
    return {
        "seconds": time.perf_counter() - start,
        "kept": kept[relevant].tolist(),
        "any_null_kept": bool(kept[nulls].any()),
        "raw_p": fitted.pvalues_[relevant].tolist(),
        "shares": (values / np.abs(values).max()).tolist(),
        "pvalue": fitted.pvalue_,
    }


def run(scenario, game, repetitions, n_permutations, seed, cache, n_jobs):
    path = cache / f"{scenario}-{game}-r{repetitions}-p{n_permutations}-s{seed}.json"
    if path.exists():
        return json.loads(path.read_text())
    fits = Parallel(n_jobs=n_jobs)(
        delayed(one_fit)(scenario, game, seed + r, n_permutations) for r in range(repetitions)
    )
    cache.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(fits))
    return fits


def summarise(scenario, game, fits):
    relevant, nulls, _ = SCENARIOS[scenario]
    relevant, nulls = list(relevant), list(nulls)
    shares = np.array([f["shares"] for f in fits])
    null_shares = shares[:, nulls].mean(axis=1)
    row = {
        "scenario": scenario,
        "game": game,
        "repetitions": len(fits),
        "null_share_mean": float(null_shares.mean()),
        "null_share_se": float(null_shares.std(ddof=1) / np.sqrt(len(fits))),
        "relevant_shares": np.round(shares[:, relevant].mean(axis=0), 3).tolist(),
        "seconds": float(np.mean([f["seconds"] for f in fits])),
    }
    if scenario == "block-categorical":
        below = float(np.mean([f["categorical_below"] for f in fits]))
        return {
            **row,
            "kept": "",
            "fwer_nulls": "",
            "overall_power": "",
            "categorical_below": below,
        }
    return {
        **row,
        "kept": np.round(np.mean([f["kept"] for f in fits], axis=0), 3).tolist(),
        "fwer_nulls": float(np.mean([f["any_null_kept"] for f in fits])),
        "overall_power": float(np.mean([f["pvalue"] <= ALPHA for f in fits])),
        "categorical_below": "",
    }


def _kept_rows(results):
    """The rows of a previous run's ``results`` file, by scenario and game."""
    import csv

    if not results.exists():
        return {}
    with open(results, newline="") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        for field in ("null_share_mean", "null_share_se", "seconds"):
            row[field] = float(row[field])
    return {(r["scenario"], r["game"]): r for r in rows}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=100)
    parser.add_argument("--null-repetitions", type=int, default=200)
    parser.add_argument("--block-repetitions", type=int, default=20)
    parser.add_argument("--permutations", type=int, default=999)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--games", nargs="+", default=list(GAMES), choices=GAMES)
    parser.add_argument("--scenarios", nargs="+", default=list(SCENARIOS), choices=SCENARIOS)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="3 data sets per scenario and 99 permutations (a smoke test)",
    )
    parser.add_argument(
        "--keep-others",
        action="store_true",
        help="keep the rows of the games and scenarios not run from the results file under --out",
    )
    parser.add_argument(
        "--cached-only",
        action="store_true",
        help="tabulate the scenarios and games already in the cache, run none",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.repetitions = args.null_repetitions = args.block_repetitions = 3
        args.permutations = 99
    kept_rows = _kept_rows(args.out / "games.csv") if args.keep_others else {}
    rows = []
    for scenario in SCENARIOS:
        repetitions = getattr(args, SCENARIOS[scenario][2])
        for game in GAMES:
            if scenario not in args.scenarios or game not in args.games:
                if (scenario, game) in kept_rows:
                    rows.append(kept_rows[scenario, game])
                continue
            if game == "observational" and scenario.startswith("mmd"):
                continue  # one engine pass per permutation; its v(empty) holds the drift
            if game == "marginal" and scenario == "block-categorical":
                continue  # a ranking scenario, no tests
            if game == "oracle" and scenario not in ORACLE_TERMS:
                continue
            cached = (
                args.out / "cache" / f"{scenario}-{game}-r{repetitions}-p"
                f"{args.permutations}-s{args.seed}.json"
            )
            if args.cached_only and not cached.exists():
                continue
            fits = run(
                scenario,
                game,
                repetitions,
                args.permutations,
                args.seed,
                args.out / "cache",
                args.n_jobs,
            )
            rows.append(summarise(scenario, game, fits))
            print(json.dumps(rows[-1]), flush=True)
    header = [
        "scenario",
        "game",
        "relevant kept (alpha=0.05)",
        "any null kept (FWER)",
        "overall power",
        "relevant shares",
        "null share mean +- se",
        "s per fit",
    ]
    table = markdown_table(
        header,
        [
            [
                r["scenario"],
                r["game"],
                r["kept"] or f"categorical last: {r['categorical_below']}",
                r["fwer_nulls"],
                r["overall_power"],
                r["relevant_shares"],
                f"{r['null_share_mean']:+.4f} +- {r['null_share_se']:.4f}",
                f"{r['seconds']:.1f}",
            ]
            for r in rows
        ],
    )
    command = (
        f"`python -m benchmarks.games --repetitions {args.repetitions} "
        f"--null-repetitions {args.null_repetitions} --block-repetitions "
        f"{args.block_repetitions} --permutations {args.permutations} --seed {args.seed}`"
    )
    note = (
        f"{command}. Kept: the share of data sets where ``alpha=0.05`` (maxT, "
        f"{args.permutations} permutations) keeps each relevant feature, in the order of "
        "the scenario's list; FWER: the share where it keeps any independent-null "
        "feature. Shares: values divided by the largest absolute value, averaged over "
        "data sets. marginal: each feature's own HSIC or MMD at the selectors' kernels, "
        "tested alone with the same permutations count and maxT (the reference for the "
        "per-feature tests; its shares are of that statistic, its overall power the smallest "
        "adjusted p-value). oracle: a Pearson test of y against each feature's true term "
        "(sin(2 x1), x2^2, the feature itself for the others), Bonferroni over the 20: what "
        "a marginal test that knew every term's shape could do (its shares are of r^2)."
    )
    if kept_rows:
        note += (
            " Built with --keep-others: a run replaces the rows of the games and scenarios it "
            f"names (the last: {', '.join(args.games)} on {', '.join(args.scenarios)}) and "
            "keeps the other rows of earlier runs (their times were measured in those runs)."
        )
    if args.cached_only:
        note += (
            " Tabulated with --cached-only: the scenario and game pairs not listed were not run."
        )
    write_results(
        args.out, "games", rows, "The three games and the marginal test side by side", note, table
    )


if __name__ == "__main__":
    main()
