"""A fit inside an enclosing joblib backend against the same fit without one.

    python -m benchmarks.scale.backends [--rows 2000] [--features 20] [--repeats 3]
                                        [--out DIR]

Users wrap grid searches in ``joblib.parallel_backend("loky")``; the chunks of pairs must
still run in threads then (a process per chunk re-imports the package and reloads the
compiled kernels). friedman1 at ``--rows`` x ``--features``, two fits: the default
(``HSICShapleySelector(n_features_to_select=5)``, the model+anova game) and the exact ANOVA game
with its 99 permutations (``estimate="biased", alpha=0.05, n_permutations=99``), each with
``n_jobs=2`` under no backend, loky and threading, the smallest wall time of ``--repeats``
fits (the compiled kernels and the loky workers warmed up first). The baseline is the same
fit with ``n_jobs=2`` and no enclosing backend.
"""

import argparse
import time
from pathlib import Path

import numpy as np
from joblib import parallel_backend

from benchmarks._measure import records_table, write_results

RESULTS = Path(__file__).parent / "results"


def wall_seconds(repeats, backend, make, X, y):
    """The smallest wall time of ``make().fit(X, y)`` over ``repeats`` fits in ``backend``."""
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        if backend is None:
            make().fit(X, y)
        else:
            with parallel_backend(backend, n_jobs=2):
                make().fit(X, y)
        best = min(best, time.perf_counter() - start)
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    from sklearn.datasets import make_friedman1

    from pkex_select import HSICShapleySelector

    X, y = make_friedman1(args.rows, args.features, noise=1.0, random_state=0)
    fits = {
        "default (model+anova)": lambda: HSICShapleySelector(5, n_jobs=2, random_state=0),
        "exact ANOVA game, 99 permutations": lambda: HSICShapleySelector(
            estimate="biased", alpha=0.05, n_permutations=99, n_jobs=2, random_state=0
        ),
    }
    for backend in (None, "loky", "threading"):  # warm up the kernels and the loky workers
        wall_seconds(1, backend, fits["default (model+anova)"], X[:300], y[:300])
    rows = []
    for name, make in fits.items():
        alone = wall_seconds(args.repeats, None, make, X, y)
        for backend in (None, "loky", "threading"):
            seconds = alone if backend is None else wall_seconds(args.repeats, backend, make, X, y)
            rows.append(
                {
                    "fit": name,
                    "enclosing backend": backend or "none",
                    "wall s": round(seconds, 2),
                    "x none": round(seconds / alone, 2),
                }
            )
            print(rows[-1], flush=True)
    note = (
        f"`python -m benchmarks.scale.backends --rows {args.rows} --features {args.features} "
        f"--repeats {args.repeats}`: wall seconds on the machine's two cores, the smallest of "
        f"{args.repeats} fits; 'x none' is the time over the same fit without an enclosing "
        "backend."
    )
    table = records_table(rows)
    title = "Fits inside an enclosing joblib backend"
    write_results(args.out, "backends", rows, title, note, table)


if __name__ == "__main__":
    main()
