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
    np.testing.assert_allclose(
        interpolation_shapley(Z, weights, nodes),
        expected,
        rtol=0,
        atol=1e-10 * np.abs(weights).sum(),
    )


def test_stability_benchmark_runs(tmp_path):
    from benchmarks.stability.__main__ import main

    main(["--dims", "10", "12", "--out", str(tmp_path)])
    rows = list(csv.DictReader(open(tmp_path / "results.csv")))
    assert {"method", "d", "abs_error", "seconds"} <= set(rows[0])
    assert {r["method"] for r in rows} == {"pkex", "recursion", "fft", "chebyshev", "enumeration"}
    pkex = [r for r in rows if r["method"] == "pkex"]
    assert all(float(r["abs_error"]) < 1e-10 for r in pkex)


def test_power_benchmark_runs(tmp_path):
    from benchmarks.power.__main__ import METHODS, main

    main(
        [
            "--quick",
            "--repetitions",
            "2",
            "--permutations",
            "19",
            "--n-jobs",
            "1",
            "--out",
            str(tmp_path),
        ]
    )
    rows = list(csv.DictReader(open(tmp_path / "power.csv")))
    assert {r["method"] for r in rows} == set(METHODS)
    assert {r["scenario"] for r in rows} >= {"one", "spread", "xor", "null"}
    assert all(0 <= float(r["rejection_rate"]) <= 1 for r in rows)


def test_power_benchmark_refreshes_one_method_of_cached_scenarios(tmp_path):
    from benchmarks.power.__main__ import run_scenario

    args = (("mmd", "one", 5, 100), 2, 19, 0, tmp_path, 1)
    first = run_scenario(*args)
    again = run_scenario(*args, refresh=("pkex",))
    assert [r["method"] for r in again] == [r["method"] for r in first]
    for before, after in zip(first, again):
        assert before["rejection_rate"] == after["rejection_rate"]  # seeded: same outcome


def test_power_benchmark_refreshes_one_method_from_the_results_file(tmp_path):
    """Without a cache, --refresh takes the other methods' rows from a results file written
    with the same options, and reruns only the named method."""
    import shutil

    from benchmarks.power.__main__ import main

    options = ["--quick", "--repetitions", "2", "--permutations", "19", "--n-jobs", "1"]
    main([*options, "--out", str(tmp_path)])
    before = list(csv.DictReader(open(tmp_path / "power.csv")))
    shutil.rmtree(tmp_path / "cache")
    main([*options, "--out", str(tmp_path), "--refresh", "pkex"])
    after = list(csv.DictReader(open(tmp_path / "power.csv")))
    assert [(r["scenario"], r["method"]) for r in after] == [
        (r["scenario"], r["method"]) for r in before
    ]
    for old, new in zip(before, after):
        assert old["rejection_rate"] == new["rejection_rate"]  # seeded: the same outcome
        if old["method"] != "pkex":
            assert old["seconds_per_test"] == new["seconds_per_test"]  # kept, not rerun


def test_power_benchmark_planted_selection_table(tmp_path):
    from benchmarks.power.__main__ import planted_selection, planted_table

    rows = planted_selection(2, 0, tmp_path, 1)
    assert [r["method"] for r in rows] == [
        "pkex, 199 permutations (maxT)",
        "pkex, 999 permutations (maxT)",
        "t-test, Bonferroni",
        "Kolmogorov-Smirnov, Bonferroni",
    ]
    assert all(r["kept"] in (0.0, 0.5, 1.0) and r["repetitions"] == 2 for r in rows)
    assert planted_selection(2, 0, tmp_path, 1) == rows  # read back from the cache
    assert "| t-test, Bonferroni |" in planted_table(rows)


def test_interactions_benchmark_agrees_with_shapiq(tmp_path):
    pytest.importorskip("shapiq")
    from benchmarks.interactions.__main__ import main

    main(["--dims", "6", "--points", "3", "--budget", "64", "--out", str(tmp_path)])
    rows = list(csv.DictReader(open(tmp_path / "interactions.csv")))
    exact = [r for r in rows if r["method"] == "shapiq-exact"]
    assert len(exact) == 3 and all(float(r["max_diff_vs_pkex"]) < 1e-10 for r in exact)


def test_explain_benchmark_prints_node_counts(tmp_path):
    from benchmarks.explain.__main__ import main

    main(
        [
            "--dims",
            "30",
            "--methods",
            "pkex",
            "pkex-exact",
            "--kernel",
            "narrow",
            "--out",
            str(tmp_path),
        ]
    )
    rows = {r["method"]: r for r in csv.DictReader(open(tmp_path / "explain.csv"))}
    assert rows["pkex-exact"]["nodes"] == "15"
    assert 1 <= int(rows["pkex"]["nodes"]) <= 15
    assert float(rows["pkex-exact"]["max_abs_diff"]) < 1e-12


def test_power_benchmark_hyppo_rows_are_permutation_tests():
    from benchmarks.power.__main__ import hyppo_pvalue, scenario_data

    # hyppo's default replaces the permutations by a chi-square approximation (n > 20).
    for statistic, kind in (("mmd", "mixture"), ("hsic", "linear")):
        X, target, _ = scenario_data(statistic, kind, 20, 150, 0)
        pvalues = [hyppo_pvalue(X, target, statistic, 19, seed) for seed in (0, 1, 2)]
        assert all(abs(20 * p - round(20 * p)) < 1e-9 for p in pvalues)
    X, groups, _ = scenario_data("mmd", "mixture", 20, 150, 0)
    shifted = X[groups == 1, :2].mean(axis=0) - X[groups == 0, :2].mean(axis=0)
    assert np.all(shifted > 0.15)  # 10% of the second sample, 3 sd: 0.3 sd on average


def test_games_benchmark_fits_and_summarises_each_game():
    from benchmarks.games.__main__ import one_fit, summarise

    fits = {
        game: [one_fit("mmd-partial-null", game, seed, 19) for seed in range(2)]
        for game in ("anova", "pairwise_anova", "baseline", "marginal")
    }
    for game, rows in fits.items():
        row = summarise("mmd-partial-null", game, rows)
        assert row["repetitions"] == 2 and len(row["kept"]) == 2
        assert 0 <= row["fwer_nulls"] <= 1
    # The shifted features carry most of the anova game's shares.
    assert np.mean([f["shares"][:2] for f in fits["anova"]]) > 0.5
    # The marginal reference tests each shifted feature alone: both kept in the first data
    # set; in the ANOVA game both have the smallest raw p-value 19 permutations can give.
    assert fits["marginal"][0]["kept"] == [True, True]
    assert fits["anova"][0]["raw_p"] == [0.05, 0.05]


def test_units_benchmark_runs_every_test(tmp_path):
    from benchmarks.power.units import main

    main(["--repetitions", "2", "--permutations", "19", "--n-jobs", "1", "--out", str(tmp_path)])
    rows = list(csv.DictReader(open(tmp_path / "units.csv")))
    assert len(rows) == 5 and all(0 <= float(r["rejection_rate"]) <= 1 for r in rows)


def test_anova_weight_benchmark_runs(tmp_path):
    from benchmarks.games.weight import main

    main(
        [
            "--repetitions",
            "1",
            "--permutations",
            "19",
            "--weights",
            "0.3",
            "--n-jobs",
            "1",
            "--out",
            str(tmp_path),
        ]
    )
    text = (tmp_path / "weight.md").read_text()
    assert "| w = 0.3 (auto) |" in text
    assert "| HSIC xor, d = 20, n = 300 | " in text and "| x1 kept | " in text
    assert all(f"\n| {fold} | " in text for fold in range(5))  # a selection per fold


def test_alpha_cost_benchmark_runs(tmp_path):
    """Both fits per seed, their ratio, and the test's count of friedman1's five."""
    from benchmarks.scale.alpha_cost import main

    main(["--rows", "300", "--features", "8", "--seeds", "2", "--out", str(tmp_path)])
    rows = (tmp_path / "alpha_cost.csv").read_text().splitlines()
    assert rows[0] == "seed,alpha=0.05 s,default s,ratio,permutations,kept,false" and len(rows) == 3
    assert "ratio of the medians" in (tmp_path / "alpha_cost.md").read_text()


def test_monotone_benchmark_runs(tmp_path):
    from benchmarks.scale.monotone import main

    main(["--rows", "300", "400", "--repeats", "1", "--out", str(tmp_path)])
    assert "| 400 | biased |" in (tmp_path / "monotone.md").read_text()


def test_cli_scale_benchmark_runs(tmp_path):
    from benchmarks.scale.cli import main

    main(["--rows", "300", "--features", "6", "--out", str(tmp_path)])
    text = (tmp_path / "cli.md").read_text()
    assert "| pkex-select rank | " in text and "the five largest values: 5 of 5" in text


def test_backends_benchmark_runs(tmp_path):
    from benchmarks.scale.backends import main

    main(["--rows", "200", "--features", "5", "--repeats", "1", "--out", str(tmp_path)])
    text = (tmp_path / "backends.md").read_text()
    assert "| default (model+anova) | loky | " in text and "| threading | " in text


def test_exact_floor_benchmark_runs(tmp_path):
    from benchmarks.scale.exact import main

    main(["--rows", "200", "--out", str(tmp_path)])
    assert "| 200 | 20 | 19900 | 2 | " in (tmp_path / "exact.md").read_text()


def test_threads_benchmark_runs_every_case_in_every_round(tmp_path, monkeypatch):
    """Every case runs in both settings in every round; the second core's speed-up is the
    median over the rounds of the paired ratios."""
    from benchmarks.scale import threads

    calls = []

    def run(setting, rows, repeats, options):
        calls.append((setting, rows, str(options)))
        jobs = len(options["n_jobs"])
        # Round 2 is slower; free / pinned is each round's ratio (1.1 and 0.6, median 0.85),
        # not that of the medians (1.4 / 2.0).
        second_round = len(calls) > 6  # 3 cases (default, alpha=, the reference), 2 settings
        ratio = (1.5 if setting == "pinned" else 1.25) + 0.1 * second_round
        wall = {("pinned", False): 1.0, ("free", False): 1.1}.get((setting, second_round))
        wall = wall or {"pinned": 3.0, "free": 1.8}[setting]
        return {"wall": [wall, 1.0][:jobs], "cpu": [1.0, 1.5][:jobs], "ratio": ratio}

    monkeypatch.setattr(threads, "run", run)
    threads.main(["--sizes", "500", "--rounds", "2", "--repeats", "1", "--out", str(tmp_path)])
    cases = len(calls) // 4
    first, second = calls[: 2 * cases], calls[2 * cases :]
    assert sorted(first) == sorted(second) and len({call[1:] for call in first}) == cases
    assert [call[0] for call in first[:2]] == ["pinned", "free"]
    assert [call[0] for call in second[:2]] == ["free", "pinned"]
    text = (tmp_path / "threads.md").read_text()
    assert "| default, n = 500, n_jobs=1 | 2.00 | 1.00 | 1.45 | 1.00 | 0.85 |" in text
    assert "| default, n = 500, n_jobs=2 | 1.00 | 1.50 | 1.00 | 1.50 | 1.00 |" in text
    assert "| alpha=0.05, n = 2000 | 1.55 (1.50-1.60) | 1.30 (1.25-1.35) |" in text


@pytest.mark.parametrize("ceiling", ["eigh", "fft"])
def test_threads_worker_takes_the_jobs_in_turn(capsys, ceiling):
    """The worker runs each n_jobs once to warm up, then the fits in turn (the order
    alternating), and reports the median of the paired ratios."""
    import json

    from benchmarks.scale import threads

    threads.worker("free", 0, 3, {"ceiling": ceiling, "n_jobs": [1, 2]})
    result = json.loads(capsys.readouterr().out)
    assert len(result["wall"]) == len(result["cpu"]) == 2 and result["ratio"] > 0
    assert (
        threads.second_core_table([["reference", [1.64, 1.5, 1.7], [0.5]]])
        .rstrip()
        .endswith("| reference | 1.64 (1.50-1.70) | 0.50 (0.50-0.50) |")
    )
