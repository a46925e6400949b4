"""The default fit's CPU time against n, beside mutual information: no drop at the switch.

    python -m benchmarks.scale.monotone [--rows 500 1000 1500 2000 2100 3000 5000 10000 20000
                                         30000 50000 100000] [--features 20] [--repeats 3]
                                        [--out benchmarks/scale/results]

friedman1 (``make_friedman1(n, d, noise=1)``), ``HSICShapleySelector(n_features_to_select=5)``
with its defaults (``estimate="auto"``, ``n_repetitions="auto"``) against scikit-learn's
``mutual_info_regression``, one thread (``OMP_NUM_THREADS=1`` for numba,
``threadpool_limits(1)`` for BLAS, ``n_jobs=None``), the smallest CPU time of ``--repeats``
fits in this process (the compiled kernels warmed up first). The ratio column is the
default's time over mutual information's; "found" counts friedman1's five relevant
features among the five selected.
"""

import argparse
import time
from pathlib import Path

import numpy as np

from benchmarks._measure import one_thread, records_table, write_results

RESULTS = Path(__file__).parent / "results"


def cpu_seconds(repeats, function, *args, **kwargs):
    """The smallest CPU time of ``function(*args, **kwargs)`` over ``repeats`` calls."""
    best = np.inf
    for _ in range(repeats):
        start = time.process_time()
        result = function(*args, **kwargs)
        best = min(best, time.process_time() - start)
    return best, result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rows",
        type=int,
        nargs="+",
        default=[500, 1000, 1500, 2000, 2100, 3000, 5000, 10000, 20000, 30000, 50000, 100000],
    )
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    one_thread()
    from sklearn.datasets import make_friedman1
    from sklearn.feature_selection import mutual_info_regression

    from pkex_select import HSICShapleySelector

    HSICShapleySelector().fit(*make_friedman1(300, args.features, random_state=0))
    rows = []
    for n in args.rows:
        X, y = make_friedman1(n, args.features, noise=1.0, random_state=0)
        seconds, selector = cpu_seconds(
            args.repeats, HSICShapleySelector(n_features_to_select=5).fit, X, y
        )
        mi_seconds, _ = cpu_seconds(args.repeats, mutual_info_regression, X, y, random_state=0)
        rows.append(
            {
                "n": n,
                "estimator": selector.estimate_,
                "partitions": selector.n_repetitions_ if selector.estimate_ == "block" else "",
                "seconds": round(seconds, 3),
                "mutual_info_seconds": round(mi_seconds, 3),
                "ratio": round(seconds / mi_seconds, 1),
                "found": int(np.sum(selector.get_support(indices=True) < 5)),
            }
        )
        print(rows[-1], flush=True)
    monotone = all(b["seconds"] >= 0.9 * a["seconds"] for a, b in zip(rows, rows[1:]))
    note = (
        f"`python -m benchmarks.scale.monotone --features {args.features} --repeats "
        f"{args.repeats}`; d = {args.features}, CPU seconds, one thread. Each step's time at "
        f"least 0.9 of the one before (timing noise): {monotone}."
    )
    table = records_table(rows)
    write_results(args.out, "monotone", rows, "Default fit time against n", note, table)


if __name__ == "__main__":
    main()
