"""The exact estimate's fit against its arithmetic floor, on parkinson (5875 x 20).

    python -m benchmarks.scale.exact [--rows 5875] [--out DIR]

The fit is ``HSICShapleySelector(estimate="biased", value_function="anova",
n_features_to_select=5)``: the exact ANOVA game over all n (n - 1) / 2 pairs at the two
bandwidth scales (1, sqrt d), the game every ``alpha=`` test attributes. Its floor is what
no implementation of that game can skip, measured on the same pairs in the same process:

- the integrals: the engine's compiled Shapley integrals (``pair_contributions``'s kernel) on
  every chunk's centred factors at both scales, the factors made outside the timing;
- one pass over the kernel factors: every pair's differences and one exponential per pair,
  feature and scale (``DataFactors``), once.

Single-threaded CPU time (``OMP_NUM_THREADS=1``, ``threadpool_limits(1)``), the compiled
kernels warmed up first; the fit's time over the floor is the ratio issue 32 asks to be
within 2.
"""

import argparse
import time
from pathlib import Path

import numpy as np

from benchmarks._measure import one_thread, records_table, write_results

RESULTS = Path(__file__).parent / "results"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=5875)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    one_thread()
    from benchmarks.feature_selection.datasets import load
    from pkex_select import HSICShapleySelector
    from pkex_select._engine import contributions
    from pkex_select._features import CentredFactors, prepare_features
    from pkex_select._plan import AllPairs

    data = load("parkinson")
    X, y = data.X.to_numpy()[: args.rows], data.y.to_numpy()[: args.rows]
    n, d = X.shape

    def make():
        return HSICShapleySelector(
            estimate="biased", value_function="anova", n_features_to_select=5, random_state=0
        )

    make().fit(X[:300], y[:300])  # compile outside the timing
    start = time.process_time()
    fitted = make().fit(X, y)
    fit_seconds = time.process_time() - start

    features = prepare_features(
        X, np.zeros(d, dtype=bool), kernel="rbf", bandwidth="median", scales="auto"
    )
    factors = features.factors()
    plan = AllPairs(n, 8 * d)
    start = time.process_time()
    for chunk in plan.chunks:
        factors(plan.pairs(chunk))
    factor_seconds = time.process_time() - start
    centred = CentredFactors.measure(plan, factors)
    integral_seconds = 0.0
    for chunk in plan.chunks:
        scales = centred(plan.pairs(chunk))
        start = time.process_time()
        for Z in scales:
            contributions(Z, None, "auto")
        integral_seconds += time.process_time() - start
    floor = factor_seconds + integral_seconds
    rows = [
        {
            "n": n,
            "d": d,
            "pairs": n * (n - 1) // 2,
            "scales": len(fitted.scales_),
            "fit s": round(fit_seconds, 2),
            "integrals s": round(integral_seconds, 2),
            "one factor pass s": round(factor_seconds, 2),
            "floor s": round(floor, 2),
            "x floor": round(fit_seconds / floor, 2),
        }
    ]
    note = (
        f"`python -m benchmarks.scale.exact --rows {args.rows}`: single-threaded CPU seconds; "
        "'floor s' is the integrals on ready factors plus one pass that makes the factors, "
        "on the fit's own pairs."
    )
    table = records_table(rows)
    write_results(args.out, "exact", rows, "The exact estimate against its floor", note, table)


if __name__ == "__main__":
    main()
