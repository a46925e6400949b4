"""How redundant the features are that each game selects, on the seven data sets.

    python -m benchmarks.feature_selection.redundancy [--methods pkex pkex-anova] [--n-jobs 2]

For each data set and outer fold of the comparison (``clean`` protocol, 5 folds, seed 0, top
20%), the features ``--methods`` select on the training rows and the mean absolute
correlation between them: the larger it is, the more the selection spends on features that
repeat each other. Selection only, no models. Writes ``results/redundancy.md``.
"""

import argparse
import math
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed

from benchmarks._measure import markdown_table
from benchmarks.feature_selection import datasets
from benchmarks.feature_selection.__main__ import _folds
from benchmarks.feature_selection.methods import select

RESULTS = Path(__file__).parent / "results"
FOLDS, FRACTION = 5, 0.2


def selection(key, method, fold):
    """The selected columns on one training fold and their mean absolute correlation."""
    dataset = datasets.load(key)
    X, y = dataset.X.to_numpy(float), dataset.y.to_numpy()
    if dataset.task == "regression":
        y = y.astype(float)
    train, _ = _folds(dataset, FOLDS, 0)[fold]
    k = max(1, math.ceil(FRACTION * X.shape[1]))
    chosen = select(method, X[train], y[train], dataset.task, k, fold)
    with np.errstate(invalid="ignore", divide="ignore"):  # constant columns
        correlation = np.abs(np.corrcoef(X[train][:, chosen].T))
    pairs = correlation[~np.eye(len(chosen), dtype=bool)]
    return float(np.nanmean(pairs)) if pairs.size else 0.0, [
        str(dataset.X.columns[j]) for j in chosen
    ]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", nargs="+", default=["pkex", "pkex-anova"])
    parser.add_argument("--datasets", nargs="+", default=list(datasets.KEYS))
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    jobs = [(key, m, f) for key in args.datasets for m in args.methods for f in range(FOLDS)]
    outcomes = dict(
        zip(jobs, Parallel(n_jobs=args.n_jobs)(delayed(selection)(*job) for job in jobs))
    )
    rows = [
        [key]
        + [f"{np.mean([outcomes[(key, m, f)][0] for f in range(FOLDS)]):.3f}" for m in args.methods]
        for key in args.datasets
    ]
    small = [key for key in args.datasets if len(outcomes[(key, args.methods[0], 0)][1]) <= 4]
    chosen = [
        [key, f] + [", ".join(outcomes[(key, m, f)][1]) for m in args.methods]
        for key in small
        for f in range(FOLDS)
    ]
    text = "\n".join(
        [
            "# Redundancy of the selected features",
            "",
            f"`python -m benchmarks.feature_selection.redundancy --methods "
            f"{' '.join(args.methods)}`: mean absolute correlation between the features each "
            f"method selects (top {FRACTION:.0%}) on the training rows, averaged over the "
            f"{FOLDS} outer folds of the comparison.",
            "",
            markdown_table(["data set", *args.methods], rows),
            "The selections on the data sets with at most four selected features:",
            "",
            markdown_table(["data set", "fold", *args.methods], chosen),
        ]
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "redundancy.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
