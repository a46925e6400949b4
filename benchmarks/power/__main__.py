"""Power and size of the overall and per-feature tests against the standard kernel tests.

    python -m benchmarks.power [--repetitions 100] [--permutations 199] [--seed 0] [--out DIR]
                               [--planted-repetitions 400] [--n-jobs 2] [--quick]
                               [--refresh pkex ...]

Two-sample (MMD) scenarios, n per sample in {100, 300}, d in {5, 20, 100}:

- ``one``: a mean shift of 0.5 sd in feature 0;
- ``spread``: a mean shift of 0.75 / sqrt(d) sd in every feature (0.75 sd in total);
- ``variance``: feature 0 has 1.6 times the standard deviation;
- ``correlation``: features 0 and 1 get correlation 0.8 (independent in the other sample);
- ``null``: both samples from one distribution;
- ``mixture`` (d = 20, n = 150 only): 10% of the second sample shifted by 3 sd in features 0
  and 1, a local alternative.

Dependence (HSIC) scenarios, n in {100, 300}, d = 20, noise standard normal:
``linear`` y = x0 + 3 e, ``quadratic`` y = x0^2 + 1.5 e, ``sine`` y = sin(2 x0) + e,
``xor`` y = sign(x0 x1) (labels), ``null`` y = e.

Rows, each a permutation test with ``--permutations`` permutations at alpha = 0.05:

- ``pkex``: the default (the pairwise ANOVA game, ``scales="auto"``; ``pvalue_`` combines the
  statistic at each scale and the largest studentised per-feature statistic by weighted
  min-p);
- ``pkex-baseline``: the same with ``value_function="baseline"``, the paper's game (the
  default before 0.2);
- ``hyppo``: ``hyppo.ksample.MMD`` / ``hyppo.independence.Hsic`` (Gaussian kernel, hyppo's
  median bandwidth) as permutation tests (``auto=False``: with its default ``auto=True``
  hyppo replaces the permutations by a chi-square approximation for n > 20);
- ``joint-median``: a Gaussian kernel with the joint median heuristic on the standardised
  data, written here (one Gram matrix, then permutations);
- ``univariate``: one test per feature with Bonferroni correction, as drift monitors do
  (Kolmogorov-Smirnov for two samples; Spearman correlation for dependence).

Also ``one`` at d = 20, n = 150 per sample, for how often ``alpha=0.05`` keeps the shifted
feature; that target gets a table of its own over ``--planted-repetitions`` data sets, with
199 and 999 permutations, beside a t-test and a Kolmogorov-Smirnov test of every feature with
Bonferroni correction (the t-test is the most powerful test of a Gaussian location shift, so
it shows about the best a rule with family-wise error control can do here). Reported per
scenario: rejection rate (power, or size under the null), the family-wise error of
``adjusted_pvalues_`` (maxT) under the null, how often ``alpha=0.05`` selection keeps the
planted feature (``one``, ``variance``, ``linear``...), and the mean time per test. Rates
are over ``--repetitions`` data sets; a rate p has a Monte-Carlo standard error of
sqrt(p (1 - p) / repetitions), 2.2 points at p = 0.05 and 5 points at p = 0.5 for 100.
Times are per test, measured with ``--n-jobs`` repetitions running at once.
Writes ``results/power.csv``, ``results/power.md`` and ``results/figure.png``; results are
cached per scenario under ``--out``/cache, so an interrupted run resumes, and ``--refresh``
reruns only the named methods in cached scenarios, or where there is no cache in those of
the results file under ``--out`` when its command line had the same options (everything is
seeded, so the other rows are what a full run gives).
"""

import argparse
import json
import sys
import time
import warnings
import zlib
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed
from scipy.spatial.distance import pdist, squareform
from scipy.stats import ks_2samp, spearmanr, ttest_ind

from benchmarks._measure import markdown_table, progress, save_figure, write_results
from pkex_select import HSICShapleySelector, MMDShapleyAttributor

RESULTS = Path(__file__).parent / "results"
ALPHA = 0.05
MMD_KINDS = ("one", "spread", "variance", "correlation", "null")
HSIC_KINDS = ("linear", "quadratic", "sine", "xor", "null")
METHODS = ("pkex", "pkex-baseline", "hyppo", "joint-median", "univariate")


def two_samples(kind, d, n, rng):
    X = rng.normal(size=(2 * n, d))
    second = slice(n, 2 * n)
    if kind == "one":
        X[second, 0] += 0.5
    elif kind == "spread":
        X[second] += 0.75 / np.sqrt(d)
    elif kind == "variance":
        X[second, 0] *= 1.6
    elif kind == "correlation":
        shared = rng.normal(size=n)
        X[second, 0] = np.sqrt(0.8) * shared + np.sqrt(0.2) * X[second, 0]
        X[second, 1] = np.sqrt(0.8) * shared + np.sqrt(0.2) * X[second, 1]
    elif kind == "mixture":
        X[n : n + n // 10, :2] += 3.0
    return X, np.repeat([0, 1], n)


def dependence(kind, d, n, rng):
    X = rng.normal(size=(n, d))
    noise = rng.normal(size=n)
    y = {
        "linear": X[:, 0] + 3 * noise,
        "quadratic": X[:, 0] ** 2 + 1.5 * noise,
        "sine": np.sin(2 * X[:, 0]) + noise,
        "xor": np.sign(X[:, 0] * X[:, 1]),
        "null": noise,
    }[kind]
    return X, y


PLANTED = {
    "one": {0},
    "variance": {0},
    "correlation": {0, 1},
    "mixture": {0, 1},
    "linear": {0},
    "quadratic": {0},
    "sine": {0},
    "xor": {0, 1},
}


def joint_median_pvalue(X, target, statistic, n_permutations, rng):
    """Gaussian kernel with the joint median heuristic on standardised data."""
    Xs = (X - X.mean(0)) / X.std(0)
    squared = squareform(pdist(Xs, "sqeuclidean"))
    K = np.exp(-squared / np.median(squared[np.triu_indices(len(X), 1)]))
    H = np.eye(len(X)) - 1.0 / len(X)
    Kc = H @ K @ H
    if statistic == "mmd":

        def value(labels):
            c = np.where(labels == 0, 1 / np.sum(labels == 0), -1 / np.sum(labels == 1))
            return c @ K @ c
    else:
        ys = (target - target.mean()) / target.std()
        ly = squareform(pdist(ys[:, None], "sqeuclidean"))
        L = np.exp(-ly / max(np.median(ly[np.triu_indices(len(X), 1)]), 1e-12))

        def value(order):
            return np.sum(Kc * L[np.ix_(order, order)])

        target = np.arange(len(X))
    observed = value(target)
    null = np.array([value(rng.permutation(target)) for _ in range(n_permutations)])
    return (1 + np.sum(null >= observed)) / (1 + n_permutations)


def univariate_pvalue(X, target, statistic):
    if statistic == "mmd":
        p = [ks_2samp(X[target == 0, j], X[target == 1, j]).pvalue for j in range(X.shape[1])]
    else:
        p = [spearmanr(X[:, j], target).pvalue for j in range(X.shape[1])]
    return min(1.0, X.shape[1] * min(p))


def hyppo_pvalue(X, target, statistic, n_permutations, seed):
    from hyppo.independence import Hsic
    from hyppo.ksample import MMD

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # hyppo warns below 1000 permutations
        if statistic == "mmd":
            return MMD().test(
                X[target == 0], X[target == 1], reps=n_permutations, auto=False, random_state=seed
            )[1]
        return Hsic().test(
            X, target[:, None].astype(float), reps=n_permutations, auto=False, random_state=seed
        )[1]


def data_rng(kind, d, n, seed):
    """The generator of one data set: the same for a scenario's table row and the planted
    table, so their first data sets coincide."""
    return np.random.default_rng([seed, d, n, zlib.crc32(kind.encode())])


def scenario_data(statistic, kind, d, n, seed):
    """One data set of a scenario, its target (labels or y) and the estimator that tests it."""
    rng = data_rng(kind, d, n, seed)
    if statistic == "mmd":
        return *two_samples(kind, d, n, rng), MMDShapleyAttributor
    return *dependence(kind, d, n, rng), HSICShapleySelector


def one_repetition(statistic, kind, d, n, seed, n_permutations, methods=METHODS):
    X, target, estimator = scenario_data(statistic, kind, d, n, seed)
    result, seconds = {}, {}
    any_flagged = kept = None

    if "pkex" in methods:
        start = time.perf_counter()
        fitted = estimator(n_permutations=n_permutations, alpha=ALPHA, random_state=seed).fit(
            X, target
        )
        seconds["pkex"] = time.perf_counter() - start
        result["pkex"] = fitted.pvalue_
        any_flagged = bool(np.any(fitted.adjusted_pvalues_ <= ALPHA))
        planted = PLANTED.get(kind, set())
        kept = planted <= set(fitted.get_support(indices=True).tolist()) if planted else None

    if "pkex-baseline" in methods:
        start = time.perf_counter()
        baseline = estimator(
            n_permutations=n_permutations, value_function="baseline", random_state=seed
        ).fit(X, target)
        seconds["pkex-baseline"] = time.perf_counter() - start
        result["pkex-baseline"] = baseline.pvalue_

    others = {
        "hyppo": lambda: hyppo_pvalue(X, target, statistic, n_permutations, seed),
        "joint-median": lambda: joint_median_pvalue(
            X, target, statistic, n_permutations, np.random.default_rng(seed)
        ),
        "univariate": lambda: univariate_pvalue(X, target, statistic),
    }
    for method, test in others.items():
        if method in methods:
            start = time.perf_counter()
            result[method] = test()
            seconds[method] = time.perf_counter() - start
    return result, seconds, any_flagged, kept


def scenario_cache(job, repetitions, n_permutations, seed, cache):
    statistic, kind, d, n = job
    return cache / f"{statistic}-{kind}-d{d}-n{n}-r{repetitions}-p{n_permutations}-s{seed}.json"


def _results_rows(out, repetitions, n_permutations, seed):
    """The rows of the results file under ``out`` by scenario, where it was written by a run
    with these options (its command line in ``power.md`` says so), else an empty dict."""
    import csv

    command = f"--repetitions {repetitions} --permutations {n_permutations} --seed {seed}`"
    if not (out / "power.md").exists() or command not in (out / "power.md").read_text():
        return {}
    by_job = {}
    with open(out / "power.csv", newline="") as f:
        for row in csv.DictReader(f):
            for field in ("d", "n", "repetitions"):
                row[field] = int(row[field])
            for field in ("rejection_rate", "seconds_per_test", "fwer_adjusted", "planted_kept"):
                row[field] = float(row[field]) if row[field] else ""
            job = (row["statistic"], row["scenario"], row["d"], row["n"])
            by_job.setdefault(job, []).append(row)
    return by_job


def run_scenario(job, repetitions, n_permutations, seed, cache, n_jobs, refresh=(), stored=None):
    """Rows of one scenario ``job`` = (statistic, kind, d, n), from the cache when there, or
    else from ``stored`` (a results file's rows) when ``refresh`` names methods to rerun
    (every method's data and permutations are seeded, so the others' rows stand)."""
    statistic, kind, d, n = job
    path = scenario_cache((statistic, kind, d, n), repetitions, n_permutations, seed, cache)
    cached = json.loads(path.read_text()) if path.exists() else None
    if cached is None and refresh and stored:
        cached = stored.get(job)
    methods = METHODS if cached is None else tuple(m for m in METHODS if m in refresh)
    if not methods:
        return cached
    pvalues = {m: [] for m in methods}
    seconds = {m: 0.0 for m in methods}
    flagged, kept = [], []
    # Repetitions run in worker processes; each fit inside is single-threaded.
    outcomes = Parallel(n_jobs=n_jobs)(
        delayed(one_repetition)(statistic, kind, d, n, seed + r, n_permutations, methods)
        for r in range(repetitions)
    )
    for result, timing, any_flagged, kept_planted in outcomes:
        for m in methods:
            pvalues[m].append(result[m])
            seconds[m] += timing[m]
        flagged.append(any_flagged)
        if kept_planted is not None:
            kept.append(kept_planted)
    rows = {
        m: {
            "statistic": statistic,
            "scenario": kind,
            "d": d,
            "n": n,
            "method": m,
            "rejection_rate": float(np.mean(np.array(pvalues[m]) <= ALPHA)),
            "seconds_per_test": seconds[m] / repetitions,
            "fwer_adjusted": float(np.mean(flagged)) if kind == "null" and m == "pkex" else "",
            "planted_kept": float(np.mean(kept)) if kept and m == "pkex" else "",
            "repetitions": repetitions,
        }
        for m in methods
    }
    rows = [rows.get(r["method"], r) for r in cached] if cached else list(rows.values())
    cache.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows))
    return rows


PLANTED_SCENARIO = ("one", 20, 150)  # the selection target
# Scenarios at one (d, n) only, left out of the figure's curves.
SINGLE_SCENARIOS = {PLANTED_SCENARIO, ("mixture", 20, 150)}
PLANTED_PERMUTATIONS = (199, 999)


def planted_repetition(seed, n_permutations):
    """Whether ``alpha=0.05`` keeps the shifted feature of one data set: with pkex's
    adjusted p-values (``n_permutations``), or with the reference tests when it is 0."""
    kind, d, n = PLANTED_SCENARIO
    X, groups = two_samples(kind, d, n, data_rng(kind, d, n, seed))
    if n_permutations:
        fitted = MMDShapleyAttributor(
            n_permutations=n_permutations, alpha=ALPHA, random_state=seed
        ).fit(X, groups)
        return {f"pkex, {n_permutations} permutations (maxT)": bool(fitted.get_support()[0])}
    first, second = X[groups == 0], X[groups == 1]
    return {
        "t-test, Bonferroni": bool(ttest_ind(first, second).pvalue[0] * d <= ALPHA),
        "Kolmogorov-Smirnov, Bonferroni": bool(
            ks_2samp(first[:, 0], second[:, 0]).pvalue * d <= ALPHA
        ),
    }


def planted_cache(repetitions, seed, cache):
    return cache / f"planted-r{repetitions}-s{seed}.json"


def planted_selection(repetitions, seed, cache, n_jobs):
    """Rows ``{"method", "kept", "standard_error", "repetitions"}`` of the planted target."""
    path = planted_cache(repetitions, seed, cache)
    if path.exists():
        return json.loads(path.read_text())
    rows = []
    for n_permutations in (*PLANTED_PERMUTATIONS, 0):
        outcomes = Parallel(n_jobs=n_jobs)(
            delayed(planted_repetition)(seed + r, n_permutations) for r in range(repetitions)
        )
        for method in outcomes[0]:
            kept = float(np.mean([outcome[method] for outcome in outcomes]))
            rows.append(
                {
                    "method": method,
                    "kept": kept,
                    "standard_error": float(np.sqrt(kept * (1 - kept) / repetitions)),
                    "repetitions": repetitions,
                }
            )
    cache.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows))
    return rows


def planted_table(rows):
    kind, d, n = PLANTED_SCENARIO
    title = (
        f"\n## Selection of the shifted feature: 0.5 sd in 1 of {d} features, {n} per "
        f"sample, alpha = {ALPHA}\n\nShare of {rows[0]['repetitions']} data sets in which "
        "the shifted feature is kept (plus or minus one Monte-Carlo standard error).\n\n"
    )
    return title + markdown_table(
        ["method", "kept"],
        [[r["method"], f"{r['kept']:.3f} +- {r['standard_error']:.3f}"] for r in rows],
    )


def scenarios(quick):
    """The scenarios, the costliest (d = 100, n = 300: 12 s per data set) last."""
    sizes, dims = ((100,), (5, 20)) if quick else ((100, 300), (5, 20, 100))
    jobs = [("mmd", kind, d, n) for d in dims for n in sizes for kind in MMD_KINDS]
    jobs += [("hsic", kind, 20, n) for n in sizes for kind in HSIC_KINDS]
    if not quick:  # the selection target (0.5 sd in 1 of 20 features), a local alternative
        jobs += [("mmd", *single) for single in sorted(SINGLE_SCENARIOS)]
    return sorted(jobs, key=lambda job: job[2:] == (100, 300))


def _rate(value):
    return "" if value == "" else f"{value:.2f}"


def summary(rows):
    by = {}
    for r in rows:
        by.setdefault((r["statistic"], r["scenario"], r["d"], r["n"]), {})[r["method"]] = r
    table = []
    for (statistic, kind, d, n), methods in by.items():
        rates = {m: methods[m]["rejection_rate"] for m in METHODS}
        best_standard = max(rates["hyppo"], rates["joint-median"])
        table.append(
            [statistic.upper(), kind, d, n]
            + [f"{rates[m]:.2f}" for m in METHODS]
            + [
                f"{rates['pkex'] - best_standard:+.2f}",
                f"{rates['pkex'] - rates['pkex-baseline']:+.2f}",
                _rate(methods["pkex"]["fwer_adjusted"]),
                _rate(methods["pkex"]["planted_kept"]),
                f"{methods['pkex']['seconds_per_test']:.2f}",
                f"{methods['hyppo']['seconds_per_test']:.2f}",
            ]
        )
    header = (
        ["test", "scenario", "d", "n"]
        + list(METHODS)
        + [
            "pkex - best standard",
            "pkex - pkex-baseline",
            "maxT FWER (null)",
            "planted kept (alpha=0.05)",
            "pkex s",
            "hyppo s",
        ]
    )
    return markdown_table(header, table)


def draw_figure(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mmd = [
        r
        for r in rows
        if r["statistic"] == "mmd" and (r["scenario"], r["d"], r["n"]) not in SINGLE_SCENARIOS
    ]
    kinds = [k for k in MMD_KINDS]
    sizes = sorted({r["n"] for r in mmd})
    fig, axes = plt.subplots(
        len(sizes),
        len(kinds),
        figsize=(3 * len(kinds), 2.6 * len(sizes)),
        sharey=True,
        squeeze=False,
    )
    for i, n in enumerate(sizes):
        for k, kind in enumerate(kinds):
            ax = axes[i, k]
            for method in METHODS:
                points = sorted(
                    (r["d"], r["rejection_rate"])
                    for r in mmd
                    if r["scenario"] == kind and r["n"] == n and r["method"] == method
                )
                if points:
                    ax.plot(
                        *zip(*points),
                        marker="o",
                        label=method,
                        linewidth=2.5 if method == "pkex" else 1,
                    )
            ax.axhline(ALPHA, color="grey", linestyle=":", linewidth=1)
            ax.set_xscale("log")
            ax.set_title(f"{kind}, n = {n} + {n}", fontsize=9)
            ax.set_xlabel("d")
    axes[0, 0].set_ylabel("rejection rate")
    axes[0, -1].legend(fontsize=7)
    fig.suptitle("Two-sample tests: power (size for null) against d")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=100)
    parser.add_argument("--permutations", type=int, default=199)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--planted-repetitions",
        type=int,
        default=400,
        help="data sets for the planted-feature selection table (default: 400)",
    )
    parser.add_argument(
        "--n-jobs", type=int, default=2, help="repetitions run in parallel processes (default: 2)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="n = 100 and d in {5, 20} only (a smoke run)"
    )
    parser.add_argument(
        "--refresh",
        nargs="+",
        choices=METHODS,
        default=(),
        help="rerun these methods in cached scenarios, or in the results file's (after a change)",
    )
    parser.add_argument(
        "--cached-only",
        action="store_true",
        help="tabulate the scenarios already in the cache, run none",
    )
    args = parser.parse_args(argv)
    cache = args.out / "cache"
    planted = []
    if not args.quick and not (
        args.cached_only and not planted_cache(args.planted_repetitions, args.seed, cache).exists()
    ):
        planted = planted_selection(args.planted_repetitions, args.seed, cache, args.n_jobs)
    rows, missing = [], []
    stored = (
        _results_rows(args.out, args.repetitions, args.permutations, args.seed)
        if args.refresh
        else {}
    )
    for job in progress(scenarios(args.quick), desc="power benchmark", file=sys.stderr):
        key = (job, args.repetitions, args.permutations, args.seed)
        if args.cached_only and not scenario_cache(*key, cache).exists():
            missing.append(job)
            continue
        rows += run_scenario(*key, cache, args.n_jobs, args.refresh, stored)
    write_results(
        args.out,
        "power",
        rows,
        "Power and size of the overall tests",
        f"`python -m benchmarks.power --repetitions {args.repetitions} --permutations "
        f"{args.permutations} --seed {args.seed}`; alpha = {ALPHA}; each rate over "
        f"{args.repetitions} data sets (Monte-Carlo standard error up to "
        f"{0.5 / np.sqrt(args.repetitions):.3f})."
        + (
            " Tabulated with --cached-only; not run: "
            + "; ".join(f"{s.upper()} {kind}, d = {d}, n = {n}" for s, kind, d, n in missing)
            + "."
            if missing
            else ""
        ),
        summary(rows) + (planted_table(planted) if planted else ""),
    )
    save_figure(draw_figure, rows, args.out / "figure.png")


if __name__ == "__main__":
    main()
