"""Why the restore check cannot close the even-effect cliff: the gains it sees.

    python -m benchmarks.selection.restore_gains [--repetitions 20] [--n-jobs 2]

The default's model game loses an even effect (``|x|``, ``cos 2x``) where the alignment
widens it away and the restore check does not put it back: that check refits the ridge with
the feature at its median-heuristic bandwidth and takes it where the leave-one-out error
drops by more than 10% (``_ridge_game._RESTORE_GAIN``). On the planted designs of
:mod:`benchmarks.selection.planted` (same data sets and seeds) this reads the check's own
arguments from the default fit and computes, for every feature the alignment set aside,
the leave-one-out gain ``1 - error with it / error without`` at its median-heuristic
bandwidth and at 2x and 4x that bandwidth. Reported per design and n: the set-aside
relevant features and the quantiles of their gains, the largest gain of a set-aside noise
column (all of them, and among the five of largest ANOVA value that the default tries),
and per threshold the share of set-aside relevant features above it and the data sets
where some noise column tried passes it.
"""

import argparse
import warnings
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed

from benchmarks._measure import records_table
from benchmarks.selection import planted
from pkex_select import HSICShapleySelector, _ridge_game, _selection

RESULTS = Path(__file__).parent / "results"
# Bandwidths tried, as multiples of the median heuristic's (gamma divided by their squares).
WIDTHS = (1.0, 2.0, 4.0)
THRESHOLDS = (0.02, 0.05, 0.1)


def restore_arguments(X, y, seed):
    """The arguments and the ANOVA evidence of the default fit's restore check."""
    recorded = {}
    check = _selection.restored_features

    def recording(*arguments, **options):
        recorded["arguments"], recorded["evidence"] = arguments, options["evidence"]
        return check(*arguments, **options)

    _selection.restored_features = recording
    try:
        HSICShapleySelector(random_state=seed).fit(X, y)
    finally:
        _selection.restored_features = check
    return recorded["arguments"], recorded["evidence"]


def gains(arguments, evidence):
    """Each set-aside feature, whether the default tries it, and its leave-one-out gain at
    each of ``WIDTHS``."""
    data, kernels, gammas, median_gammas, targets, mismatch_factors = arguments
    candidates, _ = _ridge_game._set_aside(kernels, gammas, median_gammas)
    tried = candidates[evidence[candidates] > 0]
    tried = tried[np.argsort(-evidence[tried], kind="stable")[: _ridge_game._RESTORE_TRIES]]
    K = _ridge_game._joint_kernel(data, kernels, gammas, mismatch_factors)
    error = _ridge_game._leave_one_out(K, targets)[0]
    for j in candidates:
        row = []
        for width in WIDTHS:
            trial = _ridge_game._restore_trial(
                K, data, kernels, gammas, median_gammas / width**2, j
            )
            row.append(1.0 - _ridge_game._leave_one_out(trial, targets)[0] / error)
        yield j, bool(np.isin(j, tried)), row


def one(design, n, repetition):
    X, y, relevant = planted.data_set(design, n, repetition)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        arguments, evidence = restore_arguments(X, y, repetition)
    return [
        {"relevant": bool(np.isin(j, relevant)), "tried": tried, "gains": row}
        for j, tried, row in gains(arguments, evidence)
    ]


def summary_row(design, n, data_sets):
    """One line of the table: the gains of the set-aside features over the data sets."""
    found = [r for rows in data_sets for r in rows if r["relevant"]]
    row = {"design": design, "n": n, "relevant set aside": len(found)}
    for w, width in enumerate(WIDTHS):
        values = np.array([r["gains"][w] for r in found])
        noise = [r["gains"][w] for rows in data_sets for r in rows if not r["relevant"]]
        row[f"{width:g}x: relevant gain median / 90%"] = (
            f"{np.median(values):.3f} / {np.quantile(values, 0.9):.3f}" if found else ""
        )
        row[f"{width:g}x: noise largest"] = f"{max(noise, default=np.nan):.3f}"
    for threshold in THRESHOLDS:
        above = np.mean([r["gains"][0] > threshold for r in found]) if found else np.nan
        noisy = sum(
            any(not r["relevant"] and r["tried"] and r["gains"][0] > threshold for r in rows)
            for rows in data_sets
        )
        row[f"gain > {threshold:g}: relevant / data sets with noise"] = f"{above:.2f} / {noisy}"
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repetitions", type=int, default=20)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 500])
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    jobs = [
        (design, n, r)
        for design in ("even", "blocks")
        for n in args.sizes
        for r in range(args.repetitions)
    ]
    results = Parallel(n_jobs=args.n_jobs)(delayed(one)(*job) for job in jobs)
    table = [
        summary_row(design, n, [rows for job, rows in zip(jobs, results) if job[:2] == (design, n)])
        for design in ("even", "blocks")
        for n in args.sizes
    ]
    text = (
        "# The restore check's leave-one-out gains on the planted designs\n\n"
        f"d = {planted.N_FEATURES}, {args.repetitions} data sets per design and n (those of "
        "`benchmarks.selection.planted`); gains at the median heuristic's bandwidth (1x, "
        "what the default tries) and at 2x and 4x of it; a noise column counts in the last "
        "columns where the default tries it (one of the five set-aside features of largest "
        "ANOVA value). `python -m benchmarks.selection.restore_gains --repetitions "
        f"{args.repetitions}`.\n\n{records_table(table)}\n"
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "restore_gains.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
