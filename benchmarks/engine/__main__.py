"""Engine benchmark: time, peak memory and exactness of the pair-game solvers.

    python -m benchmarks.engine [--dims 10 50 ...] [--pairs 500] [--kinds narrow wide]
                                [--seed 0] [--out DIR]

For each d, 500 pairs of RBF kernel factors of Gaussian points and Gaussian weights, of two
kinds: ``narrow``, exp(-(a - b)^2 / 8) per feature (S = sum_j |1 - z_j| grows like 0.2 d,
so the exact ceil(d / 2) nodes are needed), and ``wide``, exp(-(a - b)^2 / (2 d)) as with
scikit-learn's ``gamma="scale"`` on standardised data (S about 1 whatever d is). Methods,
all in one run and each in a fresh worker process:

- ``pkex``: this library's engine (compiled kernel, one thread, nodes from the error bound),
  ``pkex-exact`` with ``tol=0`` (ceil(d / 2) nodes: the engine before the bound),
  ``pkex-2jobs`` with ``n_jobs=2``, and ``pkex-numpy`` (the vectorised NumPy reference path);
- ``recursion``: the published prefix/suffix ESP recursion (tests/references.py). It keeps
  O(d^2) numbers per pair, so from d = 2000 it cannot hold 500 pairs in this machine's 24 GiB;
  there it runs on 8 pairs to show its overflow;
- ``enumeration``: all 2^d coalitions, for d <= 16.

The efficiency error is |sum_j phi_j - (v(all) - v(empty))| / sum_p |w_p|. Results go to
``results/engine.csv`` and ``results/engine.md``.
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from benchmarks._measure import markdown_table, measure, progress, run_worker, write_results

DIMS = (10, 16, 50, 100, 500, 1000, 2000, 5000)
RESULTS = Path(__file__).parent / "results"
RECURSION_MAX_BYTES = 12 * 2**30


def make_game(kind, n_features, n_pairs, seed):
    """RBF factors exp(-(a - b)^2 / (2 s^2)) of Gaussian points: s = 2 or s = sqrt(d)."""
    rng = np.random.default_rng([seed, n_features])
    a, b = rng.normal(size=(2, n_pairs, n_features))
    Z = np.exp(-((a - b) ** 2) / (8.0 if kind == "narrow" else 2.0 * n_features))
    weights = rng.normal(size=n_pairs)
    return Z, weights


def solver(method):
    from pkex_select import shapley_values
    from tests.references import enumeration_shapley, recursion_shapley

    return {
        "pkex": lambda Z, w: shapley_values(Z, w, n_jobs=1),
        "pkex-exact": lambda Z, w: shapley_values(Z, w, n_jobs=1, tol=0),
        "pkex-2jobs": lambda Z, w: shapley_values(Z, w, n_jobs=2),
        "pkex-numpy": lambda Z, w: shapley_values(Z, w, backend="numpy"),
        "recursion": recursion_shapley,
        "enumeration": enumeration_shapley,
    }[method]


def worker(method, kind, n_features, n_pairs, seed):
    from pkex_select._quadrature import node_counts

    Z, weights = make_game(kind, n_features, n_pairs, seed)
    solve = solver(method)
    solve(Z[:2, : min(n_features, 16)], weights[:2])  # compile / warm up outside the timing
    with np.errstate(all="ignore"):
        seconds, peak_mib, values = measure(lambda: solve(Z, weights))
        gap = weights @ np.prod(Z, axis=1) - weights.sum()
        error = abs(values.sum() - gap) / np.abs(weights).sum()
    return {
        "method": method,
        "kind": kind,
        "d": n_features,
        "nodes": int(node_counts(np.abs(Z - 1).sum(axis=1), n_features).max()),
        "n_pairs": n_pairs,
        "seconds": seconds,
        "peak_mib": peak_mib,
        "efficiency_error": float(error) if np.isfinite(error) else "overflow",
    }


def plan(kinds, dims, n_pairs):
    for kind in kinds:
        for d in dims:
            yield "pkex", kind, d, n_pairs
            yield "pkex-exact", kind, d, n_pairs
            yield "pkex-2jobs", kind, d, n_pairs
            yield "pkex-numpy", kind, d, n_pairs
            recursion_bytes = 8 * 1.5 * (d + 1) ** 2 * n_pairs
            yield "recursion", kind, d, n_pairs if recursion_bytes <= RECURSION_MAX_BYTES else 8
            if d <= 16:
                yield "enumeration", kind, d, n_pairs


def summary(rows):
    by = {(r["method"], r["kind"], r["d"]): r for r in rows}
    table = []
    for kind, d in sorted({(r["kind"], r["d"]) for r in rows}):
        pkex, rec = by[("pkex", kind, d)], by.get(("recursion", kind, d))
        exact = by[("pkex-exact", kind, d)]
        cells = [
            kind,
            d,
            pkex["nodes"],
            -(-d // 2),
            f"{pkex['seconds']:.4f}",
            f"{exact['seconds']:.4f}",
            f"{exact['seconds'] / pkex['seconds']:.1f}x",
            f"{by[('pkex-2jobs', kind, d)]['seconds']:.4f}",
            f"{by[('pkex-numpy', kind, d)]['seconds']:.4f}",
        ]
        if rec and rec["n_pairs"] == pkex["n_pairs"]:
            cells += [f"{rec['seconds']:.3f}", f"**{rec['seconds'] / pkex['seconds']:.0f}x**"]
        else:
            cells += [f"not run ({rec['n_pairs']} pairs only)" if rec else "-", "-"]
        enum = by.get(("enumeration", kind, d))
        cells += [f"{enum['seconds']:.3f}" if enum else "-"]
        cells += [f"{pkex['peak_mib']:.1f}", f"{rec['peak_mib']:.0f}" if rec else "-"]
        cells += [
            _fmt(pkex["efficiency_error"]),
            _fmt(rec["efficiency_error"]) if rec else "-",
            _fmt(enum["efficiency_error"]) if enum else "-",
        ]
        table.append(cells)
    header = [
        "kind",
        "d",
        "nodes used",
        "exact nodes",
        "pkex s",
        "pkex exact s",
        "bound saves",
        "pkex 2 jobs s",
        "pkex NumPy s",
        "recursion s",
        "speed-up",
        "enumeration s",
        "pkex peak MiB",
        "recursion peak MiB",
        "pkex eff. err",
        "recursion eff. err",
        "enumeration eff. err",
    ]
    return markdown_table(header, table)


def _fmt(value):
    return value if isinstance(value, str) else f"{value:.1e}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=list(DIMS))
    parser.add_argument("--pairs", type=int, default=500)
    parser.add_argument(
        "--kinds", nargs="+", choices=["narrow", "wide"], default=["narrow", "wide"]
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--worker", nargs=5, metavar=("METHOD", "KIND", "D", "PAIRS", "SEED"))
    args = parser.parse_args(argv)
    if args.worker:
        method, kind, d, n_pairs, seed = args.worker
        print(json.dumps(worker(method, kind, int(d), int(n_pairs), int(seed))))
        return

    jobs = list(plan(args.kinds, args.dims, args.pairs))
    rows = []
    for method, kind, d, n_pairs in progress(jobs, desc="engine benchmark", file=sys.stderr):
        rows.append(run_worker("benchmarks.engine", method, kind, d, n_pairs, args.seed))
    write_results(
        args.out,
        "engine",
        rows,
        "Engine benchmark",
        f"`python -m benchmarks.engine` ({args.pairs} pairs, seed {args.seed}); times are the "
        "best of up to 5 runs, peak MiB the growth of the resident set during one call.",
        summary(rows),
    )


if __name__ == "__main__":
    main()
