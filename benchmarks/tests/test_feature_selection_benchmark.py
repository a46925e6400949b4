"""The feature-selection benchmark: data loaders and a quick deterministic run."""

import csv

import pytest

from benchmarks.feature_selection import __main__ as harness
from benchmarks.feature_selection import datasets

SHAPES = {
    "sonar": (208, 60),
    "wisconsin": (569, 30),
    "ionosphere": (351, 34),
    "breast_cancer": (194, 33),
    "skillcraft": (3338, 19),
    "sml": (4137, 26),
    "parkinson": (5875, 20),
}


@pytest.mark.parametrize("key", datasets.KEYS)
def test_datasets_have_the_published_sizes(key):
    dataset = datasets.load(key)
    assert dataset.X.shape == SHAPES[key]
    assert len(dataset.y) == SHAPES[key][0]
    assert not dataset.X.isna().any().any()
    assert dataset.task == (
        "classification" if key in {"sonar", "wisconsin", "ionosphere"} else "regression"
    )


def test_a_changed_file_is_refused(tmp_path, monkeypatch):
    import gzip

    (tmp_path / "MANIFEST.sha256").write_text((datasets.DATA / "MANIFEST.sha256").read_text())
    (tmp_path / "sonar.all-data.gz").write_bytes(gzip.compress(b"1,2,M\n"))
    monkeypatch.setattr(datasets, "DATA", tmp_path)
    with pytest.raises(ValueError, match="does not match the manifest"):
        datasets.load("sonar")


def test_quick_run_is_deterministic_and_resumable(tmp_path):
    argv = ["--datasets", "sonar", "--methods", "pkex", "kbest", "--models", "gp", "svm", "--quick"]
    harness.main(argv + ["--out", str(tmp_path / "a")])
    harness.main(argv + ["--out", str(tmp_path / "b")])
    first = (tmp_path / "a" / "results.csv").read_bytes()
    assert first == (tmp_path / "b" / "results.csv").read_bytes()
    rows = list(csv.DictReader(open(tmp_path / "a" / "results.csv")))
    assert {r["method"] for r in rows} == {"pkex", "kbest"}
    assert {r["model"] for r in rows} == {"gp", "svm"}
    assert all(0.4 < float(r["mean"]) <= 1.0 for r in rows)  # accuracy of sonar classifiers
    assert {"fold_1", "fold_2"} <= set(rows[0])
    report = (tmp_path / "a" / "results.md").read_text()
    assert "*published*" in report and "HSIC Lasso" not in report  # no hsiclasso: no claim
    # A rerun reads the cache instead of refitting.
    cached = harness.run_task(
        "clean", "sonar", "pkex", 0, harness.parse(argv + ["--out", str(tmp_path / "a")])
    )
    assert set(cached["models"]) == {"gp", "svm"}


def test_redundancy_benchmark_writes_a_row_per_data_set(tmp_path):
    from benchmarks.feature_selection.redundancy import main

    main(["--methods", "kbest", "--datasets", "wisconsin", "--n-jobs", "1", "--out", str(tmp_path)])
    text = (tmp_path / "redundancy.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| wisconsin |"))
    assert 0.0 < float(row.split("|")[2]) < 1.0  # a mean absolute correlation
