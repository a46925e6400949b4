"""Leads for the cliffs that did not carry: the model game's shares joined with another game's.

    python -m benchmarks.selection.blend [--repetitions 20] [--n-jobs 2]

On the planted designs of :mod:`benchmarks.selection.planted` (same data sets, same seeds)
the paper's game ranks the even effects and the redundant copies better than the ANOVA
game beside the model game in the default. This probe takes the default fit's own model
and ANOVA values (read where the default joins them) and joins their shares with the
paper's game's: ``model + w * paper`` for w = 0.3, 0.5, 1, ``model + 0.3 * anova + 0.3 *
paper``, and the larger of the model's and the ANOVA game's shares, ``max(model, anova)``
(each feature ranked by whichever game values it more). Reported beside the default, the
paper's game and ExtraTrees: the recall at k, the share of data sets with every relevant
copy above every noise column, and the CPU seconds of the default fit and of the paper's
game (median over the data sets).

With set-aside features as terms of their own in the model game (the default since
12-05), ``max(model, anova)`` puts every copy of the blocks design above the noise at
n = 200 on 0.90 of the data sets (the default 0.55, the paper's game 0.95) and loses on real
data: the selection study with it in place of the default's sum (``python -m
benchmarks.selection --panel all --recompute default``, results in ``results/rules.md``,
measured before the terms) ranked it below the sum on the tuning half at both fractions,
since a redundant copy of a feature the model uses then ranks with it.
"""

import argparse
import time
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed

from benchmarks._measure import records_table
from benchmarks.selection import planted
from pkex_select import HSICShapleySelector
from pkex_select._selection import ShapleySelectorBase, _positive_shares

RESULTS = Path(__file__).parent / "results"
# Each blend of the shares of the model game, the ANOVA game and the paper's game.
BLENDS = {
    "model + 0.3 paper": lambda model, anova, paper: model + 0.3 * paper,
    "model + 0.5 paper": lambda model, anova, paper: model + 0.5 * paper,
    "model + 1 paper": lambda model, anova, paper: model + paper,
    "model + 0.3 anova + 0.3 paper": lambda model, anova, paper: model + 0.3 * (anova + paper),
    "max(model, anova)": lambda model, anova, paper: np.maximum(model, anova),
}


def default_fit(X, y, seed):
    """The default fit's values and the two games it blends, as it blends them."""
    parts = {}
    blend = ShapleySelectorBase._model_anova_values

    def recording(self, model_values, anova_values, *rest):
        parts["model"], parts["anova"] = model_values, anova_values
        return blend(self, model_values, anova_values, *rest)

    ShapleySelectorBase._model_anova_values = recording
    try:
        values = HSICShapleySelector(random_state=seed).fit(X, y).shapley_values_
    finally:
        ShapleySelectorBase._model_anova_values = blend
    return values, parts["model"], parts["anova"]


def one(design, n, repetition):
    X, y, relevant = planted.data_set(design, n, repetition)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.process_time()
        default, model, anova = default_fit(X, y, repetition)
        default_seconds = time.process_time() - start
        start = time.process_time()
        paper = planted.values("paper", X, y, repetition)
        paper_seconds = time.process_time() - start
        values = {
            "default": default,
            "paper": paper,
            "trees": planted.values("trees", X, y, repetition),
        }
    model, anova, paper_shares = map(_positive_shares, (model, anova, paper))
    for name, blend in BLENDS.items():
        values[name] = blend(model, anova, paper_shares)
    rows = [
        {"method": method, **planted.separation(v, relevant, design)}
        for method, v in values.items()
    ]
    return (design, n), rows, (default_seconds, paper_seconds)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repetitions", type=int, default=20)
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args(argv)
    jobs = [
        (d, n, r) for d in planted.DESIGNS for n in planted.SIZES for r in range(args.repetitions)
    ]
    results = Parallel(n_jobs=args.n_jobs)(delayed(one)(*job) for job in jobs)
    rows, seconds = defaultdict(list), defaultdict(list)
    for key, records, timing in results:
        seconds[key].append(timing)
        for record in records:
            rows[(*key, record["method"])].append(record)
    summary = []
    for design in planted.DESIGNS:
        for n in planted.SIZES:
            default_seconds, paper_seconds = np.median(seconds[(design, n)], axis=0)
            for method in ("default", "paper", "trees", *BLENDS):
                mine = rows[(design, n, method)]
                copies = np.mean([r["copies"] for r in mine])
                summary.append(
                    {
                        "design": design,
                        "n": n,
                        "method": method,
                        "recall": f"{np.mean([r['recall'] for r in mine]):.3f}",
                        "copies above all noise": "" if np.isnan(copies) else f"{copies:.2f}",
                        "default fit s": f"{default_seconds:.2f}",
                        "paper's game s": f"{paper_seconds:.2f}",
                    }
                )
    text = (
        "# The model game's shares joined with other games' (leads that did not carry)\n\n"
        f"d = {planted.N_FEATURES}, {args.repetitions} data sets per design and n (those of "
        "`benchmarks.selection.planted`); CPU seconds are medians over the data sets. "
        f"`python -m benchmarks.selection.blend --repetitions {args.repetitions}`.\n\n"
        f"{records_table(summary)}\n"
    )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "blend.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
