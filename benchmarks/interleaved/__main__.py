"""Interleaved timing of two checkouts of the package: is a change slower beyond noise?

    python -m benchmarks.interleaved --base /path/to/other/checkout [--rounds 7] [--out DIR]

Each round runs every workload once in a fresh process with this checkout and once with the
other one, in alternating order, so that drift in the machine's load hits both alike. A
workload is a small, representative slice of ``benchmarks.engine``, ``benchmarks.explain``
and ``benchmarks.hsic``; each process takes the fastest of ``--repeats`` calls after one
warm-up call (compiled kernels loaded). Reports the median time of each side and the median
of the per-round ratios (this / base), written to ``results/interleaved.md``.
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent / "results"
HERE = Path(__file__).resolve().parents[2]

WORKLOADS = {
    "engine narrow d=100, 500 pairs": """
rng = np.random.default_rng(0)
a, b = rng.normal(size=(2, 500, 100))
Z = np.exp(-(a - b) ** 2 / 8); w = rng.normal(size=500)
run = lambda: pkex_select.shapley_values(Z, w)
""",
    "engine wide d=1000, 500 pairs": """
rng = np.random.default_rng(0)
a, b = rng.normal(size=(2, 500, 1000))
Z = np.exp(-(a - b) ** 2 / 2000); w = rng.normal(size=500)
run = lambda: pkex_select.shapley_values(Z, w)
""",
    "explain SVR d=1000, 100 points": """
from sklearn.svm import SVR
rng = np.random.default_rng(0)
X = rng.normal(size=(300, 1000)); y = X[:, 0] * X[:, 1] + X[:, 2]
explainer = pkex_select.ProductKernelExplainer(SVR(gamma="scale").fit(X[:200], y[:200]))
run = lambda: explainer.explain(X[200:])
""",
    "HSIC selector default fit n=1000 d=20": """
rng = np.random.default_rng(0)
X = rng.normal(size=(1000, 20)); y = X[:, 0] + np.sin(2 * X[:, 1])
selector = pkex_select.HSICShapleySelector(random_state=0)
run = lambda: selector.fit(X, y)
""",
    "HSIC selector n=1000 d=20, 99 permutations": """
rng = np.random.default_rng(0)
X = rng.normal(size=(1000, 20)); y = X[:, 0] + np.sin(2 * X[:, 1])
selector = pkex_select.HSICShapleySelector(n_permutations=99, random_state=0)
run = lambda: selector.fit(X, y)
""",
}

TIMER = """
import sys, time, json
sys.path.insert(0, {root!r})
import numpy as np
import pkex_select
{setup}
run()
times = []
for _ in range({repeats}):
    start = time.perf_counter(); run(); times.append(time.perf_counter() - start)
print(json.dumps(min(times)))
"""


def time_once(root, setup, repeats):
    code = TIMER.format(root=str(root), setup=setup, repeats=repeats)
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, cwd=root
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, type=Path)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="calls per process after the warm-up; the fastest counts",
    )
    parser.add_argument(
        "--only",
        nargs="*",
        default=None,
        help="workloads whose name starts with one of these words",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    rows = []
    for name, setup in WORKLOADS.items():
        if args.only and not any(name.startswith(word) for word in args.only):
            continue
        this, base = [], []
        for r in range(args.rounds):
            pair = [(HERE, this), (args.base.resolve(), base)]
            for root, times in pair if r % 2 == 0 else pair[::-1]:
                times.append(time_once(root, setup, args.repeats))
        ratios = np.array(this) / np.array(base)
        rows.append(
            (name, np.median(base), np.median(this), np.median(ratios), ratios.min(), ratios.max())
        )
        print(
            f"{name}: base {rows[-1][1]:.3f} s, this {rows[-1][2]:.3f} s, "
            f"ratio {rows[-1][3]:.3f} [{rows[-1][4]:.3f}, {rows[-1][5]:.3f}]",
            flush=True,
        )
    args.out.mkdir(parents=True, exist_ok=True)
    lines = [
        f"`python -m benchmarks.interleaved --base <checkout> --rounds {args.rounds} "
        f"--repeats {args.repeats}`: per round and side, a fresh process times the fastest of "
        f"{args.repeats} calls after a warm-up; the two checkouts alternate. Seconds: median "
        "over rounds. Ratio: this / base per round (median, [min, max]).",
        "",
        "| workload | base (s) | this (s) | ratio | range |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {n} | {b:.3f} | {t:.3f} | {r:.3f} | [{lo:.3f}, {hi:.3f}] |"
        for n, b, t, r, lo, hi in rows
    ]
    (args.out / "interleaved.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
