"""Which k features differ between two samples: the attributor's top k in each game.

    python -m benchmarks.selection.shift [--repetitions 100] [--seed 0] [--n-jobs 2]

``MMDShapleyAttributor(n_features_to_select=k)`` is asked for the k features that differ,
k being the number that were changed, in scenarios with a known answer (two samples of 150
rows each, d = 20 unless said):

- ``strong-weak``: feature 0 shifted by 1 sd, features 1 and 2 by 0.4 sd;
- ``spread``: feature 0 shifted by 0.6 sd, the sd of features 1 and 2 multiplied by 1.6;
- ``correlation``: features 0 and 1 correlated 0.8 in the second sample only (each
  unchanged alone), feature 2 shifted by 0.5 sd;
- ``real``: the rows of a real data set of the selection study (``concrete``, ``boston``,
  ``bdims``, in turn) split at random into two halves, the second with three random
  features shifted by 0.5 of their sd (their real marginals and correlations kept).

Reported: the share of the changed features among the k selected (recall at k), averaged
over ``--repetitions`` data sets (Monte-Carlo standard error at most 0.5 / sqrt(R)), for
the ANOVA game, the paper's game, the model game and the default. Writes ``results/shift.md``.
"""

import argparse
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed

from benchmarks._measure import markdown_table
from benchmarks.selection import datasets
from pkex_select import MMDShapleyAttributor

RESULTS = Path(__file__).parent / "results"
SCENARIOS = ("strong-weak", "spread", "correlation", "real")
GAMES = {"anova": "anova", "paper": "baseline", "model": "model", "default": None}
REAL = ("concrete", "boston", "bdims")


def make_data(scenario, seed):
    """Two samples stacked, the sample labels, and the indices of the changed features."""
    rng = np.random.default_rng(seed)
    n, d = 150, 20
    first, second = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    if scenario == "strong-weak":
        second[:, :3] += [1.0, 0.4, 0.4]
        changed = [0, 1, 2]
    elif scenario == "spread":
        second[:, 0] += 0.6
        second[:, 1:3] *= 1.6
        changed = [0, 1, 2]
    elif scenario == "correlation":
        second[:, 1] = 0.8 * second[:, 0] + 0.6 * second[:, 1]
        second[:, 2] += 0.5
        changed = [0, 1, 2]
    else:
        data = datasets.load(REAL[seed % len(REAL)]).X
        rows = rng.permutation(len(data))
        first, second = data[rows[: len(rows) // 2]], data[rows[len(rows) // 2 :]].copy()
        changed = sorted(rng.choice(data.shape[1], 3, replace=False))
        second[:, changed] += 0.5 * data[:, changed].std(axis=0)
    X = np.vstack([first, second])
    labels = np.repeat([0, 1], [len(first), len(second)])
    return X, labels, changed


def recall(scenario, game, seed):
    X, labels, changed = make_data(scenario, seed)
    options = {} if GAMES[game] is None else {"value_function": GAMES[game]}
    attributor = MMDShapleyAttributor(n_features_to_select=len(changed), **options)
    selected = attributor.fit(X, labels).get_support(indices=True)
    return len(set(selected) & set(changed)) / len(changed)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repetitions", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    seeds = range(args.seed, args.seed + args.repetitions)
    rows = []
    for scenario in SCENARIOS:
        row = [scenario]
        for game in GAMES:
            hits = Parallel(n_jobs=args.n_jobs)(
                delayed(recall)(scenario, game, seed) for seed in seeds
            )
            row.append(f"{np.mean(hits):.3f}")
        rows.append(row)
    table = markdown_table(["scenario", *(f"{g} recall at k" for g in GAMES)], rows)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "shift.md").write_text(
        "# The attributor's top k: recall of the changed features\n\n"
        f"`python -m benchmarks.selection.shift --repetitions {args.repetitions}` "
        f"(seed {args.seed}). Share of the changed features among the k selected, mean over "
        f"{args.repetitions} data sets per scenario.\n\n{table}"
    )
    print(table)


if __name__ == "__main__":
    main()
