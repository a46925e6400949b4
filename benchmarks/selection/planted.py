"""No cliffs: planted designs where y depends on every relevant feature, whatever its shape.

    python -m benchmarks.selection.planted [--repetitions 20] [--n-jobs 2] [--features 50]
        [--sizes 200 500 2000] [--methods default model paper trees]

Four designs with d = 50 features (``--features``), at n = 200, 500 and 2000 (``--sizes``):

- ``even``: X is AR(1) with rho = 0.3 and y = |x_a| + 1{x_b > 0.5} + cos(2 x_c) + x_d x_e +
  0.5 x_d + N(0, 1), five relevant columns drawn at random: an even effect, a step, a
  periodic one and an interaction.
- ``redundant``: X standard normal, four near-copies (r ~ 0.96) of one signal s beside two
  more relevant columns, y = s + x_e + sin(2 x_f) + N(0, 0.25).
- ``blocks``: X standard normal, three near-copies (r ~ 0.9) of a signal s whose effect is
  even, a step and a pure interaction (no main effect): y = |s| + 1{x_e > 0} + x_c x_d +
  N(0, 0.25), six relevant columns.
- ``squares``: X standard normal, two squares beside a pure interaction, y = x_a^2 + x_b^2 +
  x_c x_d + N(0, 1.69): the ridge needs the pair only once it has rows enough to learn it,
  and the ANOVA game at the median width barely backs it.

Each method ranks the features and keeps k = the number of relevant ones. Reported per design
and n: the recall of the relevant features at k, the share of data sets on which every
relevant feature ranks above every noise column, the same for the near-copies alone, and the
relevant features valued exactly 0.
Methods: the selector's default (``default``: up to 100 features, and up to 200 where the
model game's rows hold the whole sample, ``value_function="model+anova"``, the model game's
shares plus 0.3 times the ANOVA game's), the model game alone (``model``), the paper's game
(``paper``), the ANOVA game alone (``anova``, the default's game elsewhere),
``value_function="model+anova"`` at any shape (``model+anova``) and ExtraTrees (300 trees).
Results go to ``results/planted.md``, or ``results/planted-<d>.md`` for another number of
features.
"""

import argparse
import warnings
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed
from sklearn.ensemble import ExtraTreesRegressor

from benchmarks._measure import records_table
from pkex_select import HSICShapleySelector

RESULTS = Path(__file__).parent / "results"
SIZES = (200, 500, 2000)
N_FEATURES = 50
METHODS = {
    "default": {},
    "model": {"value_function": "model"},
    "paper": {"value_function": "baseline"},
    "anova": {"value_function": "anova"},
    "model+anova": {"value_function": "model+anova"},
}
# The methods run unless --methods says otherwise.
RUN = ("default", "model", "paper", "trees")


def even(n, rng, n_features=N_FEATURES):
    X = np.empty((n, n_features))
    X[:, 0] = rng.standard_normal(n)
    for j in range(1, n_features):
        X[:, j] = 0.3 * X[:, j - 1] + np.sqrt(1 - 0.3**2) * rng.standard_normal(n)
    a, b, c, d, e = relevant = rng.choice(n_features, 5, replace=False)
    y = np.abs(X[:, a]) + (X[:, b] > 0.5) + np.cos(2 * X[:, c]) + X[:, d] * X[:, e]
    return X, y + 0.5 * X[:, d] + rng.standard_normal(n), relevant


def redundant(n, rng, n_features=N_FEATURES):
    X = rng.standard_normal((n, n_features))
    relevant = rng.choice(n_features, 6, replace=False)
    signal = rng.standard_normal(n)
    X[:, relevant[:4]] = signal[:, None] + 0.29 * rng.standard_normal((n, 4))
    y = signal + X[:, relevant[4]] + np.sin(2 * X[:, relevant[5]])
    return X, y + 0.5 * rng.standard_normal(n), relevant


def blocks(n, rng, n_features=N_FEATURES):
    X = rng.standard_normal((n, n_features))
    relevant = rng.choice(n_features, 6, replace=False)
    signal = rng.standard_normal(n)
    X[:, relevant[:3]] = signal[:, None] + 0.33 * rng.standard_normal((n, 3))
    c, d, e = relevant[3:]
    y = np.abs(signal) + (X[:, e] > 0) + X[:, c] * X[:, d]
    return X, y + 0.5 * rng.standard_normal(n), relevant


def squares(n, rng, n_features=N_FEATURES):
    X = rng.standard_normal((n, n_features))
    a, b, c, d = relevant = rng.choice(n_features, 4, replace=False)
    y = X[:, a] ** 2 + X[:, b] ** 2 + X[:, c] * X[:, d]
    return X, y + 1.3 * rng.standard_normal(n), relevant


DESIGNS = {"even": even, "redundant": redundant, "blocks": blocks, "squares": squares}
# The near-copies among each design's relevant columns (the first ones it returns).
COPIES = {"even": 0, "redundant": 4, "blocks": 3, "squares": 0}


def values(method, X, y, seed):
    if method == "trees":
        forest = ExtraTreesRegressor(n_estimators=300, random_state=seed, n_jobs=1)
        return forest.fit(X, y).feature_importances_
    return HSICShapleySelector(random_state=seed, **METHODS[method]).fit(X, y).shapley_values_


def data_set(design, n, repetition, n_features=N_FEATURES):
    """X, y and the relevant columns of one data set, seeded by design, n and repetition."""
    # The sizes of SIZES keep the seeds their data sets were first drawn with.
    size_seed = SIZES.index(n) if n in SIZES else n
    rng = np.random.default_rng([2026, size_seed, repetition, len(design)])
    return DESIGNS[design](n, rng, n_features)


def separation(v, relevant, design):
    """The recall of ``relevant`` among the top ``relevant.size`` of ``v``, whether every
    relevant column (and every near-copy) is valued above every noise column, and the
    relevant columns valued exactly 0."""
    noise = np.setdiff1d(np.arange(v.size), relevant)
    top = np.argsort(-v, kind="stable")[: relevant.size]
    return {
        "recall": np.isin(relevant, top).mean(),
        "separated": float(v[relevant].min() > v[noise].max()),
        "copies": float(v[relevant[: COPIES[design]]].min() > v[noise].max())
        if COPIES[design]
        else np.nan,
        "zeros": int(np.sum(v[relevant] == 0)),
    }


def one(design, n, repetition, methods=RUN, n_features=N_FEATURES):
    """Every method's recall, separation and zeros on one data set."""
    X, y, relevant = data_set(design, n, repetition, n_features)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [
            {
                "design": design,
                "n": n,
                "method": method,
                **separation(values(method, X, y, repetition), relevant, design),
            }
            for method in methods
        ]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repetitions", type=int, default=20)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--features", type=int, default=N_FEATURES)
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    parser.add_argument(
        "--methods",
        nargs="+",
        default=list(RUN),
        choices=[*METHODS, "trees"],
    )
    args = parser.parse_args(argv)
    jobs = [(d, n, r) for d in DESIGNS for n in args.sizes for r in range(args.repetitions)]
    rows = [
        row
        for rows in Parallel(n_jobs=args.n_jobs)(
            delayed(one)(*job, args.methods, args.features) for job in jobs
        )
        for row in rows
    ]
    summary = []
    for design in DESIGNS:
        for n in args.sizes:
            for method in args.methods:
                mine = [
                    r for r in rows if (r["design"], r["n"], r["method"]) == (design, n, method)
                ]
                recall = np.array([r["recall"] for r in mine])
                error = recall.std(ddof=1) / np.sqrt(recall.size)
                separated = np.mean([r["separated"] for r in mine])
                copies = np.mean([r["copies"] for r in mine])
                summary.append(
                    {
                        "design": design,
                        "n": n,
                        "method": method,
                        "recall": f"{recall.mean():.3f} ({error:.3f})",
                        "all relevant above all noise": f"{separated:.2f}",
                        "copies above all noise": "" if np.isnan(copies) else f"{copies:.2f}",
                        "relevant at exactly 0": str(sum(r["zeros"] for r in mine)),
                    }
                )
    table = records_table(summary)
    command = f"python -m benchmarks.selection.planted --repetitions {args.repetitions}"
    name = "planted.md"
    if args.features != N_FEATURES:
        command += f" --features {args.features}"
        name = f"planted-{args.features}.md"
    if list(args.sizes) != list(SIZES):
        command += " --sizes " + " ".join(map(str, args.sizes))
    if args.methods != list(RUN):
        command += " --methods " + " ".join(args.methods)
    text = (
        "# Planted designs: recall at k and separation from the noise\n\n"
        f"d = {args.features}, {args.repetitions} data sets per design and n; recall with its "
        f"standard error in brackets. `{command}`.\n\n{table}\n"
    )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / name).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
