"""Permutation tests: their CPU time against the fit and against their arithmetic floor.

    python -m benchmarks.scale.permutations [--permutations 999] [--out DIR]

Three cases on the block estimate and two on the exact one, single-threaded CPU
time (``threadpool_limits(1)``), compiled kernels warmed up first:

- HSIC: n = 20,000, d = 3, y three classes (y = digitised x0 + noise),
  ``HSICShapleySelector(alpha=0.05)`` (999 permutations, the tests' pairwise ANOVA game,
  block estimate with 10 partitions) against the same game fitted without permutations, with
  the same 10 partitions.
- MMD: two samples of 50,000 x 20, the second shifted by 0.1 sd in feature 0 and scaled by
  1.1 in feature 1, ``attribute_shift(alpha=0.05)`` against ``attribute_shift()``.
- HSIC on n = 100,000, d = 20 with a continuous y, whose block weights are computed from y
  under each permutation: ``alpha=0.05``, and ``n_permutations`` alone, which runs them all.
- The exact estimate (``estimate="biased"``): HSIC on n = 2000, d = 20 with a continuous y
  (the weights gathered from an n x n table), and MMD on the first 1000 rows of each sample.

The floor of the permutations is the product of the permuted pair weights with the pair
contributions (of the permutations run: ``alpha=0.05`` stops after the first stage where
every decision is settled), (permutations x pairs) by (pairs x features x scales), timed
here as NumPy matrix products of that shape over chunks of 20,000 pairs on the same
machine. The exact cases have more samples than permutations, so their tests draw circular
shifts, all computed in one FFT pass (``pkex_select._shifts``): there the floor is that of
random permutations, which the shifts need not reach, and "x floor" below 1 is what they save.
"""

import argparse
import time
from pathlib import Path

import numpy as np

from benchmarks._measure import one_thread, records_table, write_results

RESULTS = Path(__file__).parent / "results"
CHUNK = 20_000
# The game of the tests (what value_function="auto" resolves to with permutations), which the
# fits without permutations attribute too.
GAME = "pairwise_anova"


def cpu(function, *args, **kwargs):
    start = time.process_time()
    result = function(*args, **kwargs)
    return time.process_time() - start, result


def floor_seconds(n_permutations, n_pairs, n_columns, rng):
    """CPU time of (n_permutations x n_pairs) @ (n_pairs x n_columns) in chunks of pairs."""
    weights = rng.normal(size=(n_permutations + 1, CHUNK))
    contributions = rng.normal(size=(CHUNK, n_columns))
    seconds, _ = cpu(lambda: [weights @ contributions for _ in range(5)])
    return seconds / 5 * n_pairs / CHUNK


def row(case, pairs, tested_seconds, plain_seconds, floor, tested):
    """One table row: the fit with and without permutations, and the permutations' floor."""
    permutations = tested_seconds - plain_seconds
    return {
        "case": case,
        "pairs": pairs,
        "with alpha s": round(tested_seconds, 2),
        "without s": round(plain_seconds, 2),
        "ratio": round(tested_seconds / plain_seconds, 1),
        "permutations s": round(permutations, 2),
        "floor s": round(floor, 2),
        "x floor": round(permutations / floor, 1),
        "permutations run": tested.n_permutations_,
        "selected": " ".join(map(str, tested.get_support(indices=True)))
        if tested.alpha is not None
        else "",
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--permutations", type=int, default=999)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    one_thread()
    from pkex_select import HSICShapleySelector, attribute_shift

    rng = np.random.default_rng(0)
    rows = []

    n = 20_000
    X = rng.normal(size=(n, 3))
    y = np.digitize(X[:, 0] + 0.5 * rng.normal(size=n), [-0.5, 0.5])
    # Compile outside the timing, with and without permutations, on the block estimate
    # (so few rows alone would be attributed exactly).
    HSICShapleySelector(alpha=0.05, estimate="block").fit(X[:500], y[:500])
    HSICShapleySelector(value_function=GAME, estimate="block", n_repetitions=10).fit(
        X[:500], y[:500]
    )
    tested_seconds, tested = cpu(
        HSICShapleySelector(alpha=0.05, n_permutations=args.permutations, random_state=0).fit,
        X,
        y,
    )
    plain_seconds, _ = cpu(
        HSICShapleySelector(value_function=GAME, n_repetitions=10, random_state=0).fit, X, y
    )
    pairs = 10 * (n // 20) * 190
    floor = floor_seconds(tested.n_permutations_, pairs, 3 * len(tested.scales_), rng)
    rows.append(
        row(
            "HSIC, n = 20,000, d = 3, three classes",
            pairs,
            tested_seconds,
            plain_seconds,
            floor,
            tested,
        )
    )
    print(rows[-1], flush=True)

    P, Q = rng.normal(size=(50_000, 20)), rng.normal(size=(50_000, 20))
    Q[:, 0] += 0.1
    Q[:, 1] *= 1.1
    attribute_shift(P[:300], Q[:300], alpha=0.05, estimate="block")
    attribute_shift(P[:300], Q[:300], value_function=GAME, estimate="block")
    tested_seconds, tested = cpu(
        attribute_shift, P, Q, alpha=0.05, n_permutations=args.permutations, random_state=0
    )
    plain_seconds, _ = cpu(attribute_shift, P, Q, value_function=GAME, random_state=0)
    pairs = 10 * (100_000 // 20) * 190
    floor = floor_seconds(tested.n_permutations_, pairs, 20 * len(tested.scales_), rng)
    rows.append(row("MMD, 2 x 50,000 x 20", pairs, tested_seconds, plain_seconds, floor, tested))
    print(rows[-1], flush=True)
    # A continuous target at 10^5 rows: each permutation's block weights are computed from y
    # (no table fits), once where the decisions settle after the first look and once
    # through all the permutations (n_permutations without alpha never stops early).
    n = 100_000
    X = rng.normal(size=(n, 20))
    y = X[:, 0] + np.cos(2 * X[:, 1]) + 0.5 * rng.normal(size=n)
    HSICShapleySelector(n_permutations=49).fit(X[:3000], y[:3000])
    plain_seconds, _ = cpu(
        HSICShapleySelector(value_function=GAME, n_repetitions=10, random_state=0).fit, X, y
    )
    pairs = 10 * (n // 20) * 190
    for options in ({"alpha": 0.05}, {}):
        tested_seconds, tested = cpu(
            HSICShapleySelector(n_permutations=args.permutations, random_state=0, **options).fit,
            X,
            y,
        )
        floor = floor_seconds(tested.n_permutations_, pairs, 20 * len(tested.scales_), rng)
        case = "HSIC, n = 100,000, d = 20, continuous y" + ("" if options else ", no alpha")
        rows.append(row(case, pairs, tested_seconds, plain_seconds, floor, tested))
        print(rows[-1], flush=True)
    # The exact estimate over all pairs: a continuous target's n x n weight table, and MMD's.
    n = 2000
    X = rng.normal(size=(n, 20))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + 0.5 * rng.normal(size=n)
    # Fewer permutations than samples: the shifts' kernels compile too.
    HSICShapleySelector(estimate="biased", alpha=0.05, n_permutations=99).fit(X[:300], y[:300])
    HSICShapleySelector(estimate="biased", value_function=GAME).fit(X[:300], y[:300])
    tested_seconds, tested = cpu(
        HSICShapleySelector(
            estimate="biased", alpha=0.05, n_permutations=args.permutations, random_state=0
        ).fit,
        X,
        y,
    )
    plain_seconds, _ = cpu(
        HSICShapleySelector(estimate="biased", value_function=GAME, random_state=0).fit,
        X,
        y,
    )
    pairs = n * (n - 1) // 2
    floor = floor_seconds(tested.n_permutations_, pairs, 20 * len(tested.scales_), rng)
    case = "HSIC exact, n = 2000, d = 20, continuous y"
    rows.append(row(case, pairs, tested_seconds, plain_seconds, floor, tested))
    print(rows[-1], flush=True)

    P, Q = P[:1000], Q[:1000]
    attribute_shift(P[:100], Q[:100], estimate="biased", alpha=0.05, n_permutations=99)
    attribute_shift(P[:100], Q[:100], estimate="biased", value_function=GAME)
    tested_seconds, tested = cpu(
        attribute_shift,
        P,
        Q,
        estimate="biased",
        alpha=0.05,
        n_permutations=args.permutations,
        random_state=0,
    )
    plain_seconds, _ = cpu(
        attribute_shift, P, Q, estimate="biased", value_function=GAME, random_state=0
    )
    pairs = 2000 * 1999 // 2
    floor = floor_seconds(tested.n_permutations_, pairs, 20 * len(tested.scales_), rng)
    case = "MMD exact, 2 x 1000 x 20"
    rows.append(row(case, pairs, tested_seconds, plain_seconds, floor, tested))
    print(rows[-1], flush=True)
    note = (
        f"`python -m benchmarks.scale.permutations --permutations {args.permutations}`; CPU "
        "seconds, one thread. 'permutations s' is the fit with them less the fit without; "
        "'floor s' the matrix products of their weights with the pair contributions alone."
    )
    table = records_table(rows)
    title = "Permutations against their floor"
    write_results(args.out, "permutations", rows, title, note, table)


if __name__ == "__main__":
    main()
