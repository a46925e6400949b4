"""Which weight of the ANOVA game's centred factors, 1 + w k~_j, the defaults should use.

    python -m benchmarks.games.weight [--repetitions 40] [--permutations 199] [--seed 1000]
                                      [--weights 0.25 0.3 0.5 1] [--n-jobs 2]

The factors are 1 + w k~_j (``anova_weight``; "auto" is min(1, 6 / d), 0.3 at d = 20). A
smaller w shrinks the interactions (order q carries w^q) against the main effects. Three
kinds of signal pull apart, and each w is measured on all of them with the same data sets:

- the overall test (``pvalue_``, ``--permutations``) on the power benchmark's d = 20
  scenarios whose rates moved with the weight: XOR, whose signal is all in the
  second-order terms, and main effects beside 19 noise features (quadratic, sine,
  a variance change);
- the games benchmark's ``mixed`` scenario (x1 and x2 beside the dominant x0): how often
  ``alpha=0.05`` keeps them, and the family-wise error over its independent nulls;
- the Parkinson telemonitoring folds of the seven-data-set comparison (20 features, 11 of
  them variants of two voice measures): the top 20% the defaults select, where the
  products of a correlated group's centred factors can outweigh a single strong feature.

A rate p over R data sets has Monte-Carlo standard error sqrt(p (1 - p) / R), up to 7.9
points for R = 40; the data sets are the same for every w, so differences between
columns are paired. Writes ``results/weight.md``.
"""

import argparse
import math
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed
from sklearn.preprocessing import StandardScaler

from benchmarks._measure import markdown_table
from benchmarks.feature_selection import datasets
from benchmarks.feature_selection.__main__ import _folds
from benchmarks.games.__main__ import ALPHA, SCENARIOS, make_data
from benchmarks.power.__main__ import scenario_data
from pkex_select import HSICShapleySelector
from pkex_select._features import anova_weight

RESULTS = Path(__file__).parent / "results"
POWER_SCENARIOS = (
    ("hsic", "xor", 20, 100),
    ("hsic", "xor", 20, 300),
    ("hsic", "quadratic", 20, 100),
    ("hsic", "sine", 20, 100),
    ("mmd", "variance", 20, 100),
    ("mmd", "variance", 20, 300),
)


def _overall_rejects(weight, job, seed, n_permutations):
    X, target, estimator = scenario_data(*job, seed)
    fitted = estimator(anova_weight=weight, n_permutations=n_permutations, random_state=seed)
    return fitted.fit(X, target).pvalue_ <= ALPHA


def _mixed_kept(weight, seed, n_permutations):
    X, y = make_data("mixed", seed)
    _, nulls, _ = SCENARIOS["mixed"]
    selector = HSICShapleySelector(
        anova_weight=weight, n_permutations=n_permutations, alpha=ALPHA, random_state=seed
    )
    kept = selector.fit(X, y).get_support()
    return bool(kept[1]), bool(kept[2]), bool(kept[list(nulls)].any())


def _parkinson_selection(weight, fold):
    """The columns the benchmark's ``pkex-anova`` selects on one training fold."""
    dataset = datasets.load("parkinson")
    X, y = dataset.X.to_numpy(float), dataset.y.to_numpy(float)
    train, _ = _folds(dataset, 5, 0)[fold]
    k = math.ceil(0.2 * X.shape[1])
    selector = HSICShapleySelector(n_features_to_select=k, anova_weight=weight, random_state=fold)
    selector.fit(StandardScaler().fit_transform(X[train]), y[train])
    ranked = np.argsort(selector.ranking_)[:k]
    return [str(dataset.X.columns[j]) for j in ranked]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=40)
    parser.add_argument("--permutations", type=int, default=199)
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument("--weights", type=float, nargs="+", default=[0.25, 0.3, 0.5, 1.0])
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    weights = args.weights
    R, parallel = args.repetitions, Parallel(n_jobs=args.n_jobs)

    columns = [f"w = {w:g}" + (" (auto)" if w == anova_weight(20) else "") for w in weights]
    power_rows = []
    for job in POWER_SCENARIOS:
        statistic, kind, d, n = job
        rates = [
            np.mean(
                parallel(
                    delayed(_overall_rejects)(w, job, args.seed + r, args.permutations)
                    for r in range(R)
                )
            )
            for w in weights
        ]
        power_rows.append([f"{statistic.upper()} {kind}, d = {d}, n = {n}"] + rates)

    mixed = [
        np.mean(
            parallel(delayed(_mixed_kept)(w, args.seed + r, args.permutations) for r in range(R)),
            axis=0,
        )
        for w in weights
    ]
    mixed_rows = [
        [label] + [rates[i] for rates in mixed]
        for i, label in enumerate(["x1 kept", "x2 kept", "any null kept (FWER)"])
    ]

    selections = [parallel(delayed(_parkinson_selection)(w, f) for f in range(5)) for w in weights]
    parkinson_rows = [
        [fold] + [", ".join(chosen[fold]) for chosen in selections] for fold in range(5)
    ]

    text = "\n".join(
        [
            "# The ANOVA game's weight w, at d = 20",
            "",
            f"`python -m benchmarks.games.weight --repetitions {R} --permutations "
            f"{args.permutations} --seed {args.seed} --weights "
            f"{' '.join(map(str, weights))}`; alpha = {ALPHA}; each rate over {R} data sets "
            f"(the same for every w; standard error up to {0.5 / math.sqrt(R):.3f}).",
            "",
            "## Overall test: rejection rate",
            "",
            markdown_table(["scenario", *columns], power_rows),
            f"## Mixed scenario (n = 600, d = 20), {args.permutations} permutations, maxT",
            "",
            markdown_table(["rate", *columns], mixed_rows),
            "## Parkinson telemonitoring, top 20% (4 of 20) on each training fold, by value",
            "",
            markdown_table(["fold", *columns], parkinson_rows),
        ]
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "weight.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
