"""The default fit with and without thread limits, as a user runs it.

    python -m benchmarks.scale.threads [--sizes 500 3000 100000] [--repeats 3] [--rounds 3]
                                       [--out DIR]

Every other benchmark pins one thread; a user does not. friedman1 with 20 features, the
default fit (``HSICShapleySelector(n_features_to_select=5)``) at each size, in a fresh
process per setting: *pinned* (``OMP_NUM_THREADS=1`` and threadpoolctl's limit of one BLAS
thread, set before the package loads) and *free* (nothing set: NumPy's BLAS may start a
thread per core). Medians of ``--repeats`` fits after a warm-up fit, then the median over
``--rounds`` rounds, each running every case in both settings (which alternate); wall and
CPU time. The
ratio free / pinned of the wall time is what a user pays for the threads, and since the fit
runs its BLAS calls on one thread it should stay near 1. The largest size runs again with
``n_jobs=2``: its wall time against the first run's is what the second core gives. The same
for ``alpha=0.05`` (999 permutations) at n = 2000 with ``n_jobs=1`` and ``n_jobs=2``: the
second core helps through joblib, not through BLAS. Beside them, the machine's own ceiling
in the same rounds: 8 independent eigendecompositions of 500 x 500 matrices (one BLAS thread
each) on one joblib thread and on two, which is what two cores can give any fit here.
"""

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from benchmarks._measure import markdown_table, records_table, run_worker, write_results

RESULTS = Path(__file__).parent / "results"


def worker(setting, rows, repeats, options):
    """One setting in this process: the median wall and CPU seconds of the fits."""
    if setting == "pinned":
        os.environ["OMP_NUM_THREADS"] = "1"
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    if options.get("ceiling"):
        return ceiling(options["n_jobs"], repeats)
    from sklearn.datasets import make_friedman1

    from pkex_select import HSICShapleySelector

    X, y = make_friedman1(rows, 20, noise=1.0, random_state=0)
    HSICShapleySelector(**options).fit(X[:300], y[:300])  # compile the kernels
    walls, cpus = [], []
    for seed in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        HSICShapleySelector(random_state=seed, **options).fit(X, y)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    print(json.dumps({"wall": float(np.median(walls)), "cpu": float(np.median(cpus))}))


def ceiling(n_jobs, repeats):
    """The reference: independent eigendecompositions through joblib's threads, as the fit
    runs its independent pieces; the median wall and CPU seconds of ``repeats`` runs."""
    from joblib import Parallel, delayed

    rng = np.random.default_rng(0)
    matrices = [a @ a.T for a in rng.standard_normal((8, 500, 500))]
    walls, cpus = [], []
    for _ in range(repeats + 1):  # the first starts the thread pool and warms the caches
        wall, cpu = time.perf_counter(), time.process_time()
        Parallel(n_jobs=n_jobs, backend="threading")(delayed(np.linalg.eigh)(m) for m in matrices)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    print(json.dumps({"wall": float(np.median(walls[1:])), "cpu": float(np.median(cpus[1:]))}))


def run(setting, rows, repeats, options):
    """One setting in a fresh process, without this one's OMP_NUM_THREADS."""
    environment = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    return run_worker(
        "benchmarks.scale.threads", setting, rows, repeats, json.dumps(options), env=environment
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 3000, 100_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--worker", nargs=4, metavar=("SETTING", "ROWS", "REPEATS", "OPTIONS"))
    args = parser.parse_args(argv)
    if args.worker:
        setting, rows, repeats, options = args.worker
        return worker(setting, int(rows), int(repeats), json.loads(options))
    cases = [(f"default, n = {n}", n, {"n_features_to_select": 5}) for n in args.sizes]
    largest = max(args.sizes)  # the second core, through n_jobs
    cases.append(
        (f"default, n = {largest}, n_jobs=2", largest, {"n_features_to_select": 5, "n_jobs": 2})
    )
    cases += [
        (f"alpha=0.05, n = 2000, n_jobs={jobs}", 2000, {"alpha": 0.05, "n_jobs": jobs})
        for jobs in (1, 2)
    ]
    cases += [
        (f"reference: 8 eigendecompositions, n_jobs={jobs}", 0, {"ceiling": True, "n_jobs": jobs})
        for jobs in (1, 2)
    ]
    # Every case and both settings run in each round, the settings alternating: the
    # machine's drift (this shared machine moves by 20% between minutes) hits them alike,
    # and the second core's ratios compare runs of the same rounds.
    runs = {(name, setting): [] for name, _, _ in cases for setting in ("pinned", "free")}
    for round_ in range(args.rounds):
        for name, n, options in cases:
            for setting in ("pinned", "free") if round_ % 2 == 0 else ("free", "pinned"):
                runs[name, setting].append(run(setting, n, args.repeats, options))
        print(f"round {round_ + 1} of {args.rounds} done", flush=True)
    rows = []
    for name, _, _ in cases:
        pinned, free = (
            {
                key: float(np.median([run[key] for run in runs[name, setting]]))
                for key in ("wall", "cpu")
            }
            for setting in ("pinned", "free")
        )
        rows.append(
            {
                "fit": name,
                "pinned wall (s)": f"{pinned['wall']:.2f}",
                "pinned CPU (s)": f"{pinned['cpu']:.2f}",
                "free wall (s)": f"{free['wall']:.2f}",
                "free CPU (s)": f"{free['cpu']:.2f}",
                "free / pinned wall": f"{free['wall'] / pinned['wall']:.2f}",
            }
        )
    write_results(
        args.out,
        "threads",
        rows,
        "The default fit with and without thread limits",
        f"friedman1, 20 features; per setting, the median over {args.rounds} rounds (each "
        "running every case in both settings, which alternate) of the median of "
        f"{args.repeats} fits in a fresh process; "
        "this project's 2-core machine. `python -m benchmarks.scale.threads`.",
        records_table(rows) + "\n" + second_core_table(rows),
    )


def second_core_table(rows):
    """What the second core gives each fit run with ``n_jobs=2`` (its twin's wall time, with
    ``n_jobs=1`` or without n_jobs, over its own), pinned and free."""
    by_fit = {row["fit"]: row for row in rows}
    table = []
    for fit, two in by_fit.items():
        if not fit.endswith(", n_jobs=2"):
            continue
        name = fit.removesuffix(", n_jobs=2")
        one = by_fit.get(f"{name}, n_jobs=1", by_fit.get(name))
        table.append(
            [name]
            + [
                f"{float(one[f'{s} wall (s)']) / float(two[f'{s} wall (s)']):.2f}"
                for s in ("pinned", "free")
            ]
        )
    return "Speed-up from the second core (wall time with n_jobs=1 over n_jobs=2):\n\n" + (
        markdown_table(["work", "pinned", "free"], table)
    )


if __name__ == "__main__":
    main()
