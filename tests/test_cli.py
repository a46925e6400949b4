"""The command-line tool and the examples, run as a user runs them (subprocesses)."""

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(*args, cwd=ROOT):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300)


def test_demo_ranks_breast_cancer_features():
    result = run("-m", "pkex_select")
    assert result.returncode == 0, result.stderr
    assert "Wisconsin" in result.stdout
    lines = [line for line in result.stdout.splitlines() if re.match(r"\s*\d+\*? ", line)]
    assert len(lines) == 30
    assert sum("*" in line[:6] for line in lines) == 6  # 20% of 30
    assert "concave points" in lines[0]


@pytest.fixture
def csv_file(tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(150, 5)), columns=list("abcde"))
    frame["site"] = rng.choice(["x", "y"], size=150)
    frame["outcome"] = np.sin(2 * frame["c"]) + (frame["site"] == "x") + 0.1 * rng.normal(size=150)
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    return path


def test_rank_csv_as_json_with_pvalues_and_plot(csv_file, tmp_path):
    plot = tmp_path / "ranking.png"
    result = run("-m", "pkex_select", "rank", str(csv_file), "--target", "outcome", "--k", "2",
                 "--permutations", "49", "--json", "--plot", str(plot))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["task"] == "regression"
    selected = {row["feature"] for row in report["features"] if row["selected"]}
    assert selected == {"c", "site"}
    assert all("pvalue" in row for row in report["features"])
    assert abs(sum(r["shapley_value"] for r in report["features"]) - report["hsic"]) < 1e-12
    assert plot.stat().st_size > 0


def test_console_script_is_installed():
    script = Path(sys.executable).with_name("pkex-select")
    if not script.exists():
        pytest.skip("package not installed with its console script")
    result = subprocess.run([str(script), "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "rank" in result.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["rank", "missing.csv", "--target", "y"], "no such file"),
        (["rank", "{csv}", "--target", "nope"], "no column 'nope'"),
        (["rank", "{csv}", "--target", "outcome", "--k", "99"], "--k must be between"),
        (["rank", "{binary}", "--target", "y"], "cannot read"),
    ],
)
def test_helpful_errors(args, message, csv_file, tmp_path):
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"\xff\xfe\x00\x00garbage\x00")
    args = [a.format(csv=csv_file, binary=binary) for a in args]
    result = run("-m", "pkex_select", *args)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("script", ["explain_svm.py", "pipeline_svc.py", "mmd_drift.py"])
def test_examples_run(script, tmp_path):
    result = run(str(ROOT / "examples" / script), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
