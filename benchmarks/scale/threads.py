"""The default fit with and without thread limits, as a user runs it.

    python -m benchmarks.scale.threads [--sizes 500 3000 100000] [--repeats 3] [--rounds 3]
                                       [--out DIR]

Every other benchmark pins one thread; a user does not. friedman1 with 20 features, the
default fit (``HSICShapleySelector(n_features_to_select=5)``) at each size, in a fresh
process per setting: *pinned* (``OMP_NUM_THREADS=1`` and threadpoolctl's limit of one BLAS
thread, set before the package loads) and *free* (nothing set: NumPy's BLAS may start a
thread per core). Medians of ``--repeats`` fits after a warm-up fit, then the median over
``--rounds`` rounds, each running every case in both settings (which alternate); wall and
CPU time. The ratio free / pinned of the wall time (the median of each round's, whose two
processes run back to back) is what a user pays for the threads, and since the fit runs its
BLAS calls on one thread it should stay near 1.

The largest size runs with ``n_jobs=1`` and ``n_jobs=2`` in one process, the two fit by fit
in turn (their order alternating): the second core's speed-up is the median of the paired
ratios, so that the machine's drift between minutes (this shared machine moves by 20%)
does not enter it. The same for ``alpha=0.05`` (999 circular shifts) at n = 2000, where
the second core helps through joblib, not through BLAS, and for the machine's own ceiling:
8 independent eigendecompositions of 500 x 500 matrices (one BLAS thread each) on one
joblib thread and on two, which is what two cores can give any fit here, and the real FFTs
``alpha=0.05`` takes at n = 2000 (0.36 s of its 1.0 s there, the largest part), which is
what they can give those.
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
    """One setting in this process: the median wall and CPU seconds of the fits of each
    ``n_jobs`` in ``options["n_jobs"]`` (taken in turn), and the median paired ratio of the
    first's wall time over the last's."""
    if setting == "pinned":
        os.environ["OMP_NUM_THREADS"] = "1"
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    jobs = options.pop("n_jobs")
    if options.get("ceiling"):
        run_once = ceiling_run(options["ceiling"])
    else:
        from sklearn.datasets import make_friedman1

        from pkex_select import HSICShapleySelector

        X, y = make_friedman1(rows, 20, noise=1.0, random_state=0)
        HSICShapleySelector(**options).fit(X[:300], y[:300])  # compile the kernels

        def run_once(n_jobs, seed):
            HSICShapleySelector(random_state=seed, n_jobs=n_jobs, **options).fit(X, y)

    for n_jobs in jobs:  # warm-up: thread pools, caches, the allocator
        run_once(n_jobs, 0)
    walls, cpus = {n: [] for n in jobs}, {n: [] for n in jobs}
    for seed in range(repeats):
        for n_jobs in jobs if seed % 2 == 0 else jobs[::-1]:
            wall, cpu = time.perf_counter(), time.process_time()
            run_once(n_jobs, seed)
            walls[n_jobs].append(time.perf_counter() - wall)
            cpus[n_jobs].append(time.process_time() - cpu)
    ratios = np.array(walls[jobs[0]]) / np.array(walls[jobs[-1]])
    print(
        json.dumps(
            {
                "wall": [float(np.median(walls[n])) for n in jobs],
                "cpu": [float(np.median(cpus[n])) for n in jobs],
                "ratio": float(np.median(ratios)),
            }
        )
    )


def ceiling_run(kind):
    """A reference: independent pieces of one kind through joblib's threads, as the fit runs
    its independent pieces; ``run(n_jobs, seed)`` runs them once. "eigh": 8 eigendecompositions
    of 500 x 500 matrices; "fft": the real FFTs of ``alpha=0.05`` at n = 2000, d = 20 (334
    of 3 diagonals of 2000 pairs by 42 columns, along the pairs), 167 a task, each task on
    an array of its own."""
    from joblib import Parallel, delayed

    rng = np.random.default_rng(0)
    if kind == "eigh":
        pieces = [a @ a.T for a in rng.standard_normal((8, 500, 500))]
        task = np.linalg.eigh
    else:
        import scipy.fft

        pieces = list(rng.standard_normal((2, 3, 2000, 42)))

        def task(values):
            for _ in range(167):
                scipy.fft.rfft(values, axis=1)

    def run(n_jobs, seed):
        Parallel(n_jobs=n_jobs, backend="threading")(delayed(task)(piece) for piece in pieces)

    return run


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
    largest = max(args.sizes)  # the second core, through n_jobs
    cases = [
        (
            f"default, n = {n}",
            n,
            {"n_features_to_select": 5, "n_jobs": [1, 2] if n == largest else [None]},
        )
        for n in args.sizes
    ]
    cases += [
        ("alpha=0.05, n = 2000", 2000, {"alpha": 0.05, "n_jobs": [1, 2]}),
        ("reference: 8 eigendecompositions", 0, {"ceiling": "eigh", "n_jobs": [1, 2]}),
        ("reference: 334 FFTs of the shift tests", 0, {"ceiling": "fft", "n_jobs": [1, 2]}),
    ]
    # Every case and both settings run in each round, the settings alternating: the
    # machine's drift hits them alike.
    runs = {(name, setting): [] for name, _, _ in cases for setting in ("pinned", "free")}
    for round_ in range(args.rounds):
        for name, n, options in cases:
            for setting in ("pinned", "free") if round_ % 2 == 0 else ("free", "pinned"):
                runs[name, setting].append(run(setting, n, args.repeats, dict(options)))
        print(f"round {round_ + 1} of {args.rounds} done", flush=True)
    rows, speed_ups = [], []
    for name, _, options in cases:
        for i, n_jobs in enumerate(options["n_jobs"]):
            pinned, free = (
                {
                    key: float(np.median([run[key][i] for run in runs[name, setting]]))
                    for key in ("wall", "cpu")
                }
                for setting in ("pinned", "free")
            )
            # Each round's two processes run back to back: their ratio, not that of medians
            # over rounds minutes apart.
            free_over_pinned = np.median(
                [
                    free_run["wall"][i] / pinned_run["wall"][i]
                    for free_run, pinned_run in zip(runs[name, "free"], runs[name, "pinned"])
                ]
            )
            rows.append(
                {
                    "fit": name if n_jobs is None else f"{name}, n_jobs={n_jobs}",
                    "pinned wall (s)": f"{pinned['wall']:.2f}",
                    "pinned CPU (s)": f"{pinned['cpu']:.2f}",
                    "free wall (s)": f"{free['wall']:.2f}",
                    "free CPU (s)": f"{free['cpu']:.2f}",
                    "free / pinned wall": f"{free_over_pinned:.2f}",
                }
            )
        if len(options["n_jobs"]) == 2:
            speed_ups.append(
                [name]
                + [[run["ratio"] for run in runs[name, setting]] for setting in ("pinned", "free")]
            )
    write_results(
        args.out,
        "threads",
        rows,
        "The default fit with and without thread limits",
        f"friedman1, 20 features; per setting, the median over {args.rounds} rounds (each "
        "running every case in both settings, which alternate) of the median of "
        f"{args.repeats} fits in a fresh process, n_jobs=1 and 2 in turn in one process; "
        "free / pinned is the median over the rounds of each round's ratio (its two "
        "processes run back to back); "
        "this project's 2-core machine. `python -m benchmarks.scale.threads`.",
        records_table(rows) + "\n" + second_core_table(speed_ups),
    )


def second_core_table(speed_ups):
    """What the second core gives each work run with ``n_jobs=1`` and ``n_jobs=2``, from
    rows of (work, pinned ratios, free ratios), one ratio a round: the median over the
    rounds and, so that the machine's drift shows, their range."""

    def spread(ratios):
        return f"{np.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"

    table = [[name, spread(pinned), spread(free)] for name, pinned, free in speed_ups]
    return (
        "Speed-up from the second core (wall time with n_jobs=1 over n_jobs=2, fit by fit "
        "in turn; each round's ratio is the median of its paired ones; the median over the "
        "rounds, and their range):\n\n" + markdown_table(["work", "pinned", "free"], table)
    )


if __name__ == "__main__":
    main()
