"""Interaction benchmark: exact pairwise indices of an RBF SVR against shapiq.

    python -m benchmarks.interactions [--dims 8 12 50] [--points 100] [--budget 4096]
                                      [--out DIR]

The model is the explainer benchmark's RBF ``SVR`` (500 training points, gamma = 1 / (2 d),
nearly all of them support vectors). For each d, ``--points`` test points are explained by

- ``pkex``: ``ProductKernelExplainer.explain(X, index, max_order=2)`` for SII, STII and
  k-SII (one thread; nodes from the error bound) and SII with ``tol=0`` (``pkex-exact``),
  under the baseline value function and, for SII, the observational one with the training
  data as background;
- ``shapiq-exact``: shapiq's ``ExactComputer`` on the same game (all 2^d coalitions through
  ``coalition_value``), for d <= 12: the oracle, and a time to compare;
- ``shapiq-kernelshapiq``: shapiq's ``KernelSHAPIQ`` approximation of k-SII with ``--budget``
  coalitions, on a few points (its error against the exact values, relative to the largest
  pairwise value).

Per method: time per point and the largest difference from pkex's values. Writes
``results/interactions.csv`` and ``results/interactions.md``.
"""

import argparse
import time
from pathlib import Path

import numpy as np

from benchmarks._measure import markdown_table, progress, write_results
from benchmarks.explain.__main__ import make_model
from pkex_select import ProductKernelExplainer

RESULTS = Path(__file__).parent / "results"
INDICES = ("SII", "STII", "k-SII")


def _time(func, *args):
    start = time.perf_counter()
    result = func(*args)
    return time.perf_counter() - start, result


def _shapiq_matrix(values, n_features):
    matrix = np.zeros((n_features, n_features))
    for i in range(n_features):
        matrix[i, i] = values[(i,)]
        for j in range(i + 1, n_features):
            matrix[i, j] = matrix[j, i] = values[(i, j)]
    return matrix


def _game(explainer, x):
    def game(coalitions):
        return explainer.coalition_value(x[None], np.asarray(coalitions, dtype=bool))[0]

    return game


def run(dims, n_points, budget, seed=0):
    import shapiq

    rows = []
    for d in progress(dims, desc="d"):
        model, X_test = make_model(d, seed)
        X_train = model.support_vectors_
        points = X_test[:n_points]
        baseline = ProductKernelExplainer(model)
        observational = ProductKernelExplainer(
            model, value_function="observational", background=X_train
        )
        exact = {}
        for index in INDICES:
            seconds, explanation = _time(baseline.explain, points, index, 2)
            exact[index] = explanation.values
            rows.append(_row(d, model, "pkex", index, "baseline", seconds, len(points)))
        seconds, explanation = _time(ProductKernelExplainer(model, tol=0).explain, points, "SII", 2)
        rows.append(
            _row(
                d,
                model,
                "pkex-exact",
                "SII",
                "baseline",
                seconds,
                len(points),
                np.abs(explanation.values - exact["SII"]).max(),
            )
        )
        seconds, _ = _time(observational.explain, points, "SII", 2)
        rows.append(_row(d, model, "pkex", "SII", "observational", seconds, len(points)))
        if d <= 12:
            for index in INDICES:
                n_exact = min(len(points), 10)
                start = time.perf_counter()
                difference = 0.0
                for k in range(n_exact):
                    computer = shapiq.ExactComputer(_game(baseline, points[k]), n_players=d)
                    theirs = _shapiq_matrix(computer(index=index, order=2), d)
                    difference = max(difference, np.abs(theirs - exact[index][k]).max())
                rows.append(
                    _row(
                        d,
                        model,
                        "shapiq-exact",
                        index,
                        "baseline",
                        time.perf_counter() - start,
                        n_exact,
                        difference,
                    )
                )
        n_approx = min(len(points), 3)
        start = time.perf_counter()
        errors = []
        for k in range(n_approx):
            approximator = shapiq.KernelSHAPIQ(d, max_order=2, index="k-SII", random_state=0)
            theirs = _shapiq_matrix(approximator.approximate(budget, _game(baseline, points[k])), d)
            scale = np.abs(np.triu(exact["k-SII"][k], 1)).max()
            errors.append(np.abs(np.triu(theirs - exact["k-SII"][k], 1)).max() / scale)
        rows.append(
            _row(
                d,
                model,
                f"shapiq-kernelshapiq-{budget}",
                "k-SII",
                "baseline",
                time.perf_counter() - start,
                n_approx,
                float(np.max(errors)),
                relative=True,
            )
        )
    return rows


def _row(
    d, model, method, index, value_function, seconds, n_points, difference=None, relative=False
):
    return {
        "d": d,
        "support_vectors": len(model.support_),
        "method": method,
        "index": index,
        "value_function": value_function,
        "points": n_points,
        "ms_per_point": round(1000 * seconds / n_points, 2),
        "max_diff_vs_pkex": "reference"
        if difference is None
        else f"{difference:.1e}" + (" (relative)" if relative else ""),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=[8, 12, 50])
    parser.add_argument("--points", type=int, default=100)
    parser.add_argument("--budget", type=int, default=4096)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    rows = run(args.dims, args.points, args.budget)
    header = list(rows[0])
    table = markdown_table(header, [[row[h] for h in header] for row in rows])
    note = (
        f"{args.points} test points of an RBF SVR (500 training points, gamma = 1/(2d)), one "
        "thread; shapiq-exact on up to 10 points and KernelSHAPIQ on 3 (their time per point "
        "is over those). max_diff_vs_pkex is the largest absolute difference from pkex's "
        "values of the same index (for KernelSHAPIQ relative to the largest pairwise value). "
        "Command: python -m benchmarks.interactions " + " ".join(argv or [])
    )
    write_results(args.out, "interactions", rows, "Pairwise interaction indices", note, table)


if __name__ == "__main__":
    main()
