"""Fit time and peak memory of the default selector against rows and features, beside
pyHSICLasso and mutual information, measured in one run on this machine.

    python -m benchmarks.scale [--rows 1000 10000 100000 1000000]
                               [--features 20 200 2000 10000]
                               [--out benchmarks/scale/results]

Planted signal: y = x0 + x1^2 + sin(3 x2) + x3 + 0.5 x4 + 0.3 e, the other features pure
noise. Against rows: d = 20. Against features: n = 100, 200 and 500. Each fit runs once, in a
fresh process (peak memory counts every allocator). "found" is how many of the five planted
features are among the five a method ranks first; pyHSICLasso is left out at 10^6 rows (its
memory grows as n B M d: 1.9 GB at 10^5). Also: 999 permutations at n = 3000,
d = 20, against the same fit without, both in the ANOVA game (``pkex-tested``). Methods:
``HSICShapleySelector()`` with its defaults (``estimate="auto"``, the model game with the
ANOVA game beside it when ranking up to 100 features without tests, and up to 200 where its
rows hold the whole sample; the ANOVA game otherwise),
pyHSICLasso's regression with its published block defaults (B = 20, M = 3), and
scikit-learn's ``mutual_info_regression``.
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from benchmarks._measure import markdown_table, measure, run_worker, write_results

RESULTS = Path(__file__).parent / "results"
METHODS = ("pkex", "pyhsiclasso", "mutual_info")
PLANTED = 5


def planted(n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (
        X[:, 0]
        + X[:, 1] ** 2
        + np.sin(3 * X[:, 2])
        + X[:, 3]
        + 0.5 * X[:, 4]
        + 0.3 * rng.normal(size=n)
    )
    return X, y


def _fit(method, X, y, permutations):
    if method.startswith("pkex"):
        from pkex_select import HSICShapleySelector

        # The permutations are timed against a fit of the game they test (value_function
        # "auto" ranks by the paper's game without them and tests the ANOVA game).
        game = {"value_function": "anova"} if method == "pkex-tested" else {}
        selector = HSICShapleySelector(n_permutations=permutations, random_state=0, **game)
        selector.fit(X, y)
        return selector.shapley_values_, f"{selector.estimate_}, {selector.value_function_}"
    if method == "mutual_info":
        from sklearn.feature_selection import mutual_info_regression

        return mutual_info_regression(X, y, random_state=0), ""
    from benchmarks.feature_selection.methods import _hsic_lasso

    chosen = _hsic_lasso(X, y, classification=False, k=PLANTED)
    scores = np.zeros(X.shape[1])
    scores[chosen] = 1.0
    return scores, "B=20, M=3"


def worker(method, n, d, permutations):
    X, y = planted(int(n), int(d))
    _fit(method, X[:50], y[:50], 0)  # compile and import outside the measurement
    if method.startswith("pkex"):  # and the block estimate's kernels, which large n takes
        from pkex_select import HSICShapleySelector

        HSICShapleySelector(estimate="block", random_state=0).fit(X[:300], y[:300])
    seconds, peak, (scores, detail) = measure(
        lambda: _fit(method, X, y, int(permutations)), max_repeats=1
    )
    found = len(set(np.argsort(-scores, kind="stable")[:PLANTED]) & set(range(PLANTED)))
    print(
        json.dumps(
            {
                "method": method,
                "n": int(n),
                "d": int(d),
                "permutations": int(permutations),
                "seconds": round(seconds, 3),
                "peak_mib": round(peak, 1),
                "found": found,
                "detail": detail,
            }
        )
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1000, 10000, 100000, 1000000])
    parser.add_argument("--features", type=int, nargs="+", default=[20, 200, 2000, 10000])
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--worker", nargs=4, metavar=("METHOD", "N", "D", "PERMUTATIONS"))
    args = parser.parse_args(argv)
    if args.worker:
        worker(*args.worker)
        return
    jobs = (
        # pyHSICLasso's memory grows as n B M d (1.9 GB at n = 10^5): not at 10^6.
        [(m, n, 20, 0) for n in args.rows for m in METHODS if m != "pyhsiclasso" or n <= 10**5]
        + [(m, n, d, 0) for n in (100, 200, 500) for d in args.features for m in METHODS]
        + [("pkex-tested", 3000, 20, p) for p in (0, 999)]
    )
    rows = []
    for job in jobs:
        try:
            rows.append(run_worker("benchmarks.scale", *job, timeout=1800))
        except Exception as error:  # a method that fails or times out is reported, not fatal
            rows.append(
                {
                    "method": job[0],
                    "n": job[1],
                    "d": job[2],
                    "permutations": job[3],
                    "seconds": "failed",
                    "peak_mib": "",
                    "found": "",
                    "detail": str(error).splitlines()[-1][:80],
                }
            )
        print(rows[-1], file=sys.stderr, flush=True)
    table = markdown_table(
        ["method", "n", "d", "permutations", "seconds", "peak MiB", "found (of 5)", "detail"],
        [
            [
                r["method"],
                r["n"],
                r["d"],
                r["permutations"],
                r["seconds"],
                r["peak_mib"],
                r["found"],
                r["detail"],
            ]
            for r in rows
        ],
    )
    by = {(r["method"], r["n"], r["d"], r["permutations"]): r["seconds"] for r in rows}
    ratio = by.get(("pkex-tested", 3000, 20, 999)), by.get(("pkex-tested", 3000, 20, 0))
    note = (
        f"Command: `python -m benchmarks.scale --rows {' '.join(map(str, args.rows))} "
        f"--features {' '.join(map(str, args.features))}`; one fit per cell on this "
        "machine (2 cores, shared)."
    )
    if all(isinstance(v, float) for v in ratio):
        note += (
            f"\n\n999 permutations at n = 3000, d = 20 (the ANOVA game, which the tests use): "
            f"{ratio[0]:.1f} s against {ratio[1]:.1f} s without, {ratio[0] / ratio[1]:.1f}x."
        )
    write_results(args.out, "scale", rows, "Scale: fit time and peak memory", note, table)


if __name__ == "__main__":
    main()
