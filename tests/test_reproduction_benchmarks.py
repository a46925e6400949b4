"""The published interpolation algorithms and the stability benchmark, on small d."""

import csv

import numpy as np
import pytest

from tests.references import enumeration_shapley, interpolation_shapley


@pytest.mark.parametrize("nodes", ["fft", "chebyshev"])
@pytest.mark.parametrize("n_features", [1, 2, 5, 8])
def test_interpolation_is_exact_for_small_d(nodes, n_features):
    rng = np.random.default_rng(n_features)
    Z = rng.uniform(0, 1, (15, n_features))
    weights = rng.normal(size=15)
    expected = enumeration_shapley(Z, weights)
    np.testing.assert_allclose(interpolation_shapley(Z, weights, nodes), expected,
                               rtol=0, atol=1e-10 * np.abs(weights).sum())


def test_stability_benchmark_runs(tmp_path):
    from benchmarks.stability.__main__ import main

    main(["--dims", "10", "12", "--out", str(tmp_path)])
    rows = list(csv.DictReader(open(tmp_path / "results.csv")))
    assert {"method", "d", "abs_error", "seconds"} <= set(rows[0])
    assert {r["method"] for r in rows} == {"pkex", "recursion", "fft", "chebyshev",
                                           "enumeration"}
    pkex = [r for r in rows if r["method"] == "pkex"]
    assert all(float(r["abs_error"]) < 1e-10 for r in pkex)


def test_power_benchmark_runs(tmp_path):
    from benchmarks.power.__main__ import METHODS, main

    main(["--quick", "--repetitions", "2", "--permutations", "19", "--n-jobs", "1",
          "--out", str(tmp_path)])
    rows = list(csv.DictReader(open(tmp_path / "power.csv")))
    assert {r["method"] for r in rows} == set(METHODS)
    assert {r["scenario"] for r in rows} >= {"one", "spread", "xor", "null"}
    assert all(0 <= float(r["rejection_rate"]) <= 1 for r in rows)
