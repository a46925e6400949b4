"""The share of the default fit spent on its statistic ``hsic_``, at large n.

    python -m benchmarks.scale.statistic_share [--rows 10000 100000 1000000] [--out DIR]

The default fit ranks by the model game, whose values come from a kernel ridge on at most
1000 rows, with the ANOVA game on at most 1224 rows beside it; the pairs of every row give
only ``hsic_``, the block estimate. Each
size runs in a fresh process pinned to one thread: friedman1 with 20 features, one warm-up
fit, then the median CPU time of three fits, and within each the CPU time of the call that
computes the statistic (``_pairgame.attribute`` on the joint kernel).
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np

from benchmarks._measure import one_thread, records_table, run_worker, write_results

RESULTS = Path(__file__).parent / "results"


def worker(rows):
    one_thread()
    from sklearn.datasets import make_friedman1

    from pkex_select import HSICShapleySelector, _pairgame

    X, y = make_friedman1(rows, 20, noise=1.0, random_state=0)
    HSICShapleySelector(n_features_to_select=5).fit(X[:300], y[:300])  # compile the kernels
    attribute, spent = _pairgame.attribute, []

    def timed(statistic, factors, *args, **kwargs):
        start = time.process_time()
        result = attribute(statistic, factors, *args, **kwargs)
        # The statistic's call has the joint kernel as its one player; the ANOVA game's
        # call beside the model game is not hsic_.
        if factors.n_features == 1:
            spent.append(time.process_time() - start)
        return result

    _pairgame.attribute = timed
    fits, statistics = [], []
    for seed in range(3):
        spent.clear()
        start = time.process_time()
        selector = HSICShapleySelector(n_features_to_select=5, random_state=seed).fit(X, y)
        fits.append(time.process_time() - start)
        statistics.append(sum(spent))
    print(
        json.dumps(
            {
                "fit": float(np.median(fits)),
                "statistic": float(np.median(statistics)),
                "estimate": selector.estimate_,
                "partitions": int(selector.n_repetitions_),
                "found": int(selector.get_support()[:5].sum()),
            }
        )
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--worker", type=int, metavar="ROWS")
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args.worker)
    records = []
    for rows in args.rows:
        result = run_worker("benchmarks.scale.statistic_share", rows)
        records.append(
            {
                "n": rows,
                "estimate": result["estimate"],
                "partitions": result["partitions"],
                "fit (s)": round(result["fit"], 3),
                "hsic_ (s)": round(result["statistic"], 3),
                "hsic_ share": f"{result['statistic'] / result['fit']:.0%}",
                "relevant found (of 5)": result["found"],
            }
        )
    write_results(
        args.out,
        "statistic_share",
        records,
        "The share of the default fit spent on hsic_",
        "`python -m benchmarks.scale.statistic_share`: friedman1, d = 20, one thread, CPU "
        "seconds, medians of 3 fits in a fresh process per size.",
        records_table(records),
    )


if __name__ == "__main__":
    main()
