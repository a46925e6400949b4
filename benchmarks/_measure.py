"""Timing and peak-memory measurement shared by the benchmarks.

Peak memory is the growth of the process's resident set (VmHWM - VmRSS) while one call runs,
measured in a fresh worker process per measurement so that every allocator (NumPy's, numba's,
BLAS's) is counted and nothing is left over from an earlier run. Linux only.
"""

import csv
import json
import subprocess
import sys
import time
from pathlib import Path


def _status_kib(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def measure(func, *, min_seconds=1.0, max_repeats=5):
    """Best wall time of ``func()`` over repeats, its peak extra memory and its result."""
    baseline = _status_kib("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
    timings = []
    result = None
    while len(timings) < max_repeats and (not timings or sum(timings) < min_seconds):
        start = time.perf_counter()
        result = func()
        timings.append(time.perf_counter() - start)
    peak_mib = max(0, _status_kib("VmHWM") - baseline) / 1024
    return min(timings), peak_mib, result


def run_worker(module, *args, timeout=3600, env=None):
    """Run ``python -m module --worker args...`` (in the environment ``env``, else this
    process's) and parse the JSON line it prints."""
    command = [sys.executable, "-m", module, "--worker", *map(str, args)]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    if completed.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{completed.stderr}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def progress(iterable, **kwargs):
    """A tqdm progress bar when tqdm is installed, else the iterable itself."""
    try:
        from tqdm import tqdm
    except ImportError:
        return iterable
    return tqdm(iterable, **kwargs)


def one_thread():
    """Limit this process to one thread before pkex_select is imported: OMP_NUM_THREADS for
    numba's threading layer, threadpool_limits for BLAS, which NumPy has loaded already (two
    BLAS threads count twice the CPU time in the eigendecompositions)."""
    import os

    from threadpoolctl import threadpool_limits

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    threadpool_limits(1)


def write_results(out, name, rows, title, note, table):
    """Write ``rows`` to ``out/name.csv`` and ``title``, ``note`` and ``table`` to
    ``out/name.md``; print the table."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"{name}.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    (out / f"{name}.md").write_text(f"# {title}\n\n{note}\n\n{table}")
    print(table)


def save_figure(draw, *args):
    """Call the figure writer ``draw(*args)``; without matplotlib, say so and go on."""
    try:
        draw(*args)
    except ImportError:
        print("matplotlib is not installed: no figure", file=sys.stderr)


def markdown_table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def records_table(records):
    """The markdown table of ``records``, dicts with the same keys: one column per key."""
    return markdown_table(list(records[0]), [list(record.values()) for record in records])
