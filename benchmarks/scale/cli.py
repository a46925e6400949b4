"""The command line on a large CSV file: wall time, CPU time and peak memory of the process.

    python -m benchmarks.scale.cli [--rows 1000000] [--features 20] [--out DIR]

The planted design of ``python -m benchmarks.scale`` (y = x0 + x1^2 + sin(3 x2) + x3 +
0.5 x4 + 0.3 e, the other features noise) written as a CSV file of ``--rows`` rows (six
significant digits), then ``pkex-select rank FILE --target y --json`` with its defaults, as
a user runs it: a new process on both cores. The baseline is the part no command line can
skip, ``pandas.read_csv`` of the same file in a process of its own, measured the same way
(``resource.getrusage`` of the finished child for CPU time and peak resident memory).
"""

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from benchmarks._measure import records_table, write_results
from benchmarks.scale.__main__ import planted

RESULTS = Path(__file__).parent / "results"


def run_child(command):
    """Wall seconds, CPU seconds, peak MiB and stdout of ``command`` in a new process.

    ``ru_maxrss`` of RUSAGE_CHILDREN is the largest of the finished children, so each
    command is measured in a child of its own (``python -m benchmarks.scale.cli --child``).
    """
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.scale.cli", "--child", *command],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    wall = time.perf_counter() - start
    report = json.loads(result.stdout.splitlines()[-1])
    return wall, report["cpu"], report["peak_mib"], report["stdout"]


def child(command):
    """Run ``command`` as a grandchild and print its usage as JSON (see run_child)."""
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        json.dumps(
            {
                "cpu": usage.ru_utime + usage.ru_stime,
                "peak_mib": usage.ru_maxrss / 1024,
                "stdout": result.stdout,
            }
        )
    )


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        return child(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    X, y = planted(args.rows, args.features, seed=0)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(args.features)])
    frame["y"] = y
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "planted.csv"
        frame.to_csv(path, index=False, float_format="%.6g")
        size_mib = path.stat().st_size / 2**20
        del frame, X, y
        read = run_child([sys.executable, "-c", f"import pandas; pandas.read_csv({str(path)!r})"])
        ranked = run_child(
            [sys.executable, "-m", "pkex_select", "rank", str(path), "--target", "y", "--json"]
        )
    report = json.loads(ranked[3])
    top = [f["feature"] for f in sorted(report["features"], key=lambda f: f["rank"])[:5]]
    rows = []
    for what, (wall, cpu, peak, _) in (("pandas.read_csv", read), ("pkex-select rank", ranked)):
        rows.append(
            {
                "command": what,
                "wall s": round(wall, 1),
                "cpu s": round(cpu, 1),
                "peak MiB": round(peak),
                "x read_csv (wall)": round(wall / read[0], 1),
            }
        )
    found = len(set(top) & {f"x{j}" for j in range(5)})
    note = (
        f"`python -m benchmarks.scale.cli --rows {args.rows} --features {args.features}`: a "
        f"{size_mib:.0f} MiB CSV file, {args.rows:,} rows x {args.features} features, the "
        f"default rule ({report['selection']}; estimator {report['estimator']}, game "
        f"{report['game']}); the planted features among the five largest values: {found} of "
        "5. Each command in a new process on the machine's two cores."
    )
    table = records_table(rows)
    write_results(args.out, "cli", rows, "The command line on a large CSV file", note, table)
    print(note)


if __name__ == "__main__":
    main()
