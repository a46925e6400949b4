"""The knockoff benchmark: its designs, and a small run that summarises every rule."""

import numpy as np
import pytest

from benchmarks.knockoffs.__main__ import DESIGNS, design_data, main, score


@pytest.mark.parametrize("design", DESIGNS)
def test_designs_have_their_relevant_features(design):
    X, y, relevant, copy = design_data(design, 0)
    assert X.shape == (500, 50) and len(relevant) in (6, 12)
    correlation = np.corrcoef(np.column_stack([X, y]), rowvar=False)[-1, :-1]
    # Every design's response depends on its relevant features; the near-copy copies one.
    assert np.abs(correlation[relevant]).max() > 0.1
    if design == "near-copy":
        assert np.corrcoef(X[:, copy], X[:, relevant[0]])[0, 1] > 0.95
    else:
        assert copy is None


def test_score_counts_groups():
    groups = np.array([0, 0, 1, 2, 3])
    assert score(np.array([0, 2]), groups, np.array([1])) == (0.5, 1.0)
    assert score(np.array([], dtype=int), groups, np.array([1, 2])) == (0.0, 0.0)


def test_a_small_run_writes_every_rule(tmp_path):
    main(
        [
            "--repetitions",
            "1",
            "--draws",
            "2",
            "--designs",
            "near-copy",
            "--n-jobs",
            "1",
            "--out",
            str(tmp_path),
        ]
    )
    text = (tmp_path / "knockoffs-draws2.md").read_text()
    assert "knockoff+" in text and "e-values of 2" in text and "alpha=0.05" in text
    assert "lasso" in text
