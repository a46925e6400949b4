"""The command-line tool and the examples, run as a user runs them (subprocesses)."""

import contextlib
import importlib.util
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pkex_select.__main__ import main

ROOT = Path(__file__).resolve().parents[1]
# Plots and the gallery's examples need matplotlib (the plot and test extras).
needs_matplotlib = pytest.mark.skipif(
    importlib.util.find_spec("matplotlib") is None, reason="needs matplotlib"
)


def run(*args, cwd=ROOT, env=None):
    """Run ``python ARGS`` as a user would; ``-m pkex_select ...`` in this process.

    The CLI's ``main(argv)`` is what the console script calls, so running it here tests the
    same code without the two seconds each new interpreter spends importing the package;
    the tests of what only a process shows (the console script, signals, pipes, the demo)
    start one themselves.
    """
    if args[:2] == ("-m", "pkex_select") and env is None and cwd == ROOT:
        return _run_in_process(list(args[2:]))
    environment = None if env is None else {**os.environ, **env}
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        env=environment,
    )


def _run_in_process(argv):
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            returncode = main(argv)
        except SystemExit as exit:  # argparse's own errors and --help
            returncode = exit.code
    return subprocess.CompletedProcess(argv, returncode, stdout.getvalue(), stderr.getvalue())


def test_demo_ranks_breast_cancer_features():
    result = subprocess.run(
        [sys.executable, "-m", "pkex_select"], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert "Wisconsin" in result.stdout
    lines = [line for line in result.stdout.splitlines() if re.match(r"\s*\d+\*? ", line)]
    assert len(lines) == 30
    # 569 rows: the default tests every column, and each is related to the diagnosis; the
    # header says so and how to ask for the few a model should use.
    assert "adjusted p-value <= 0.05" in result.stdout and "Game: ANOVA" in result.stdout
    assert sum("*" in line[:6] for line in lines) == 30
    assert "Every column is related to y" in result.stdout and "--k" in result.stdout
    # The anova game's first: area error, then worst area, mean area, ...
    assert "area" in lines[0] and "concave points" in "".join(lines[:6])


@pytest.fixture
def csv_file(tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(150, 5)), columns=list("abcde"))
    frame["site"] = rng.choice(["x", "y"], size=150)
    frame["outcome"] = np.sin(2 * frame["c"]) + (frame["site"] == "x") + 0.1 * rng.normal(size=150)
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    return path


@needs_matplotlib
def test_rank_csv_as_json_with_pvalues_and_plot(csv_file, tmp_path):
    plot = tmp_path / "ranking.png"
    result = run(
        "-m",
        "pkex_select",
        "rank",
        str(csv_file),
        "--target",
        "outcome",
        "--k",
        "2",
        "--permutations",
        "49",
        "--json",
        "--plot",
        str(plot),
    )
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


def run_example(name, cwd):
    return run(str(ROOT / "examples" / name), cwd=cwd, env={"MPLBACKEND": "Agg"})


@needs_matplotlib
def test_explain_example_adds_up(tmp_path):
    result = run_example("plot_explain_svm.py", tmp_path)
    assert result.returncode == 0, result.stderr
    gap = re.search(r"largest efficiency gap (\S+)$", result.stdout, flags=re.MULTILINE)
    assert float(gap.group(1)) < 1e-10


@needs_matplotlib
def test_xor_example_finds_the_pair_that_marginal_filters_miss(tmp_path):
    result = run_example("plot_xor_interactions.py", tmp_path)
    assert result.returncode == 0, result.stderr
    assert "HSIC Shapley values pick    [5, 9]" in result.stdout
    assert "the F-test picks            [5, 9]" not in result.stdout


@needs_matplotlib
def test_pipeline_example_shows_selection_helping(tmp_path):
    result = run_example("plot_pipeline_svc.py", tmp_path)
    assert result.returncode == 0, result.stderr
    scores = dict(re.findall(r"^\s+(\d+) -> ([\d.]+)$", result.stdout, flags=re.MULTILINE))
    best_k = max(scores, key=lambda k: float(scores[k]))
    assert int(best_k) < 70 and float(scores[best_k]) > float(scores["70"])
    assert "0 of them noise" in result.stdout


@needs_matplotlib
def test_drift_example_flags_only_significant_features(tmp_path):
    result = run_example("plot_mmd_drift.py", tmp_path)
    assert result.returncode == 0, result.stderr
    table = re.findall(r"^\s+(\w+)\s+\S+\s+[\d.]+\s+([\d.]+)", result.stdout, flags=re.MULTILINE)
    significant = {name for name, p in table if float(p) <= 0.05}
    flagged = re.search(r"kept by transform\(\): (.*)$", result.stdout, flags=re.MULTILINE)
    assert set(flagged.group(1).split(", ")) == significant
    assert {"bmi", "s2"} <= significant and len(table) == 10


@pytest.fixture
def awkward_csv(tmp_path):
    """Targets of every kind users bring, and a wide-character column name."""
    rng = np.random.default_rng(1)
    n = 120
    frame = pd.DataFrame(
        {"size": rng.normal(size=n), "颜色 🎯": rng.normal(size=n), "w": rng.normal(size=n)}
    )
    frame["label"] = np.where(frame["size"] > 0, "big", "small")
    frame["small_int"] = (frame["size"] > 0).astype(int) + (frame["size"] > 1)
    frame["flag"] = frame["size"] > 0
    frame["months"] = np.round(30 * frame["size"] + 100).astype(int)
    frame["constant"] = "same"
    frame["partly_missing"] = frame["size"].where(np.arange(n) % 10 != 0)
    path = tmp_path / "awkward.csv"
    frame.to_csv(path, index=False)
    return path


def rank_json(path, *args):
    result = run("-m", "pkex_select", "rank", str(path), "--json", *args)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    return report, {row["feature"]: row for row in report["features"]}, result.stderr


@pytest.mark.parametrize(
    "target, task, args",
    [
        ("label", "classification", []),
        ("small_int", "classification", []),
        ("flag", "classification", []),
        ("months", "regression", []),
    ],
)
def test_every_kind_of_target(awkward_csv, target, task, args):
    drop = [c for c in ["label", "small_int", "flag", "months", "partly_missing"] if c != target]
    frame = pd.read_csv(awkward_csv).drop(columns=drop)
    path = awkward_csv.with_name(f"{target}.csv")
    frame.to_csv(path, index=False)
    report, rows, _ = rank_json(path, "--target", target, *args)
    assert report["task"] == task
    assert rows["size"]["rank"] == 1
    assert rows["constant"]["rank"] == len(rows) and not rows["constant"]["selected"]


def test_a_continuous_target_read_as_classes_is_refused(awkward_csv, tmp_path):
    """120 rows, 120 classes: no class has two rows, so HSIC could not depend on y."""
    pd.read_csv(awkward_csv)[["size", "w"]].to_csv(tmp_path / "w.csv", index=False)
    result = run(
        "-m",
        "pkex_select",
        "rank",
        str(tmp_path / "w.csv"),
        "--target",
        "w",
        "--task",
        "classification",
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "120 distinct class labels in 120 rows" in result.stderr


def test_constant_target_and_missing_target_rows(awkward_csv, tmp_path):
    pd.read_csv(awkward_csv)[["size", "constant"]].to_csv(tmp_path / "const.csv", index=False)
    result = run("-m", "pkex_select", "rank", str(tmp_path / "const.csv"), "--target", "constant")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "the target 'constant' is constant" in result.stderr
    frame = pd.read_csv(awkward_csv)[["size", "w", "partly_missing"]]
    frame.to_csv(tmp_path / "missing.csv", index=False)
    report, rows, stderr = rank_json(tmp_path / "missing.csv", "--target", "partly_missing")
    assert "dropped 12 of 120 rows whose target 'partly_missing' is missing" in stderr


def test_options_before_the_command_are_honoured(csv_file):
    before = run(
        "-m",
        "pkex_select",
        "--k",
        "2",
        "--json",
        "--permutations",
        "9",
        "rank",
        str(csv_file),
        "--target",
        "outcome",
    )
    after = run(
        "-m",
        "pkex_select",
        "rank",
        str(csv_file),
        "--target",
        "outcome",
        "--k",
        "2",
        "--json",
        "--permutations",
        "9",
    )
    assert before.returncode == 0, before.stderr
    assert before.stdout == after.stdout
    report = json.loads(before.stdout)
    assert sum(row["selected"] for row in report["features"]) == 2
    assert 0 < report["pvalue"] <= 1 and all("pvalue" in row for row in report["features"])
    assert all(row["adjusted_pvalue"] >= row["pvalue"] for row in report["features"])


@pytest.mark.parametrize(
    "plot, message",
    [
        ("{tmp}/no/such/folder/out.png", "does not exist"),
        ("{tmp}/out.xyz", "cannot write '.xyz' files"),
    ],
)
@needs_matplotlib
def test_plot_paths_are_checked_before_any_work(csv_file, tmp_path, plot, message):
    result = run(
        "-m",
        "pkex_select",
        "rank",
        str(csv_file),
        "--target",
        "outcome",
        "--plot",
        plot.format(tmp=tmp_path),
    )
    assert result.returncode == 2 and message in result.stderr
    assert result.stdout == "" and "Traceback" not in result.stderr


@needs_matplotlib
def test_plot_without_extension_says_where_it_went(csv_file, tmp_path):
    result = run(
        "-m",
        "pkex_select",
        "rank",
        str(csv_file),
        "--target",
        "outcome",
        "--plot",
        str(tmp_path / "noext"),
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "noext.png").stat().st_size > 0
    assert f"Saved {tmp_path / 'noext.png'}" in result.stdout


@pytest.mark.parametrize(
    "args, flag",
    [
        (["--permutations", "-1"], "--permutations"),
        (["--k", "0"], "--k"),
        (["--k", "two"], "--k"),
    ],
)
def test_errors_name_the_flags_the_user_typed(csv_file, args, flag):
    result = run("-m", "pkex_select", "rank", str(csv_file), "--target", "outcome", *args)
    assert result.returncode == 2 and flag in result.stderr
    assert "n_permutations" not in result.stderr and "n_features_to_select" not in result.stderr


def test_too_few_rows_for_the_block_estimator_names_the_flag(tmp_path):
    pd.DataFrame({"a": np.arange(10.0), "y": np.arange(10.0) ** 2}).to_csv(
        tmp_path / "small.csv", index=False
    )
    result = run(
        "-m",
        "pkex_select",
        "rank",
        str(tmp_path / "small.csv"),
        "--target",
        "y",
        "--estimator",
        "block",
    )
    assert result.returncode == 2
    assert "--estimator block needs at least 20 samples" in result.stderr
    assert "block_size" not in result.stderr


def test_k_beyond_the_columns_selects_them_all_with_a_note(csv_file):
    """As scikit-learn's SelectKBest does, and the selector itself (its warning is the note)."""
    result = run("-m", "pkex_select", "rank", str(csv_file), "--target", "outcome", "--k", "99")
    assert result.returncode == 0, result.stderr
    assert "note: --k 99 is more than the 6 features there are" in result.stderr
    assert "selected (6 of 6): the 6 largest values" in result.stdout


def test_table_reads_right(awkward_csv):
    frame = pd.read_csv(awkward_csv)[["size", "颜色 🎯", "w", "constant", "label"]]
    path = awkward_csv.with_name("table.csv")
    frame.to_csv(path, index=False)
    result = run(
        "-m", "pkex_select", "rank", str(path), "--target", "label", "--permutations", "19"
    )
    assert result.returncode == 0, result.stderr
    assert "Independence test of X and y: p = 0.05 (19 permutations)" in result.stdout
    from pkex_select.__main__ import _READING, _width

    # What a value means in the game of the tests (pairwise ANOVA), and what p-values test.
    reading = _READING["pairwise_anova"]
    assert reading.splitlines()[0] in result.stdout
    assert "the test is marginal, not conditional" in result.stdout
    assert "redundant given the others" not in result.stdout

    rows = [line for line in result.stdout.splitlines() if re.match(r"\s+\d\*? ", line)]
    # The p-value column ends at the same terminal column on every row, wide names included.
    ends = {_width(line[: re.search(r"\d\.\d{3} +\d\.\d{3}(?=  )", line).end()]) for line in rows}
    assert len(rows) == 4 and len(ends) == 1


def test_permutations_select_and_star_by_adjusted_pvalues(tmp_path):
    from sklearn.datasets import load_wine

    path = tmp_path / "wine.csv"
    load_wine(as_frame=True).frame.to_csv(path, index=False)
    result = run(
        "-m", "pkex_select", "rank", str(path), "--target", "target", "--permutations", "199"
    )
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if re.match(r"\s+\d+\*? ", line)]
    starred = [line for line in rows if line[4] == "*"]
    adjusted = [float(line.split()[-2]) for line in rows]
    assert len(starred) == sum(p <= 0.05 for p in adjusted) > 3  # not the top 20%
    assert "adjusted p-value <= 0.05" in result.stdout
    assert "bandwidth scales" not in result.stdout
    report = json.loads(
        run(
            "-m",
            "pkex_select",
            "rank",
            str(path),
            "--target",
            "target",
            "--alpha",
            "0.01",
            "--permutations",
            "199",
            "--json",
        ).stdout
    )
    assert report["selection"] == "adjusted p-value <= 0.01"
    assert all(row["selected"] == (row["adjusted_pvalue"] <= 0.01) for row in report["features"])


@pytest.mark.parametrize(
    "args, message",
    [
        (["--alpha", "0.05", "--k", "2"], "give one of --k, --alpha and --fdr, not --k and"),
        (["--fdr", "0.2", "--alpha", "0.05"], "not --alpha and --fdr"),
        (["--fdr", "2"], "--fdr: must be between 0 and 1"),
        (["--alpha", "1.5"], "--alpha: must be between 0 and 1"),
        (["--alpha", "0.05", "--permutations", "9"], "Use --permutations 39 or more"),
        (["--alpha", "0.05", "--permutations", "0"], "--permutations 0 runs no permutations"),
        (["--seed", "-5"], "--seed: must be at least 0"),
    ],
)
def test_selection_flags_are_checked(csv_file, args, message):
    result = run("-m", "pkex_select", "rank", str(csv_file), "--target", "outcome", *args)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert "random_state" not in result.stderr and "Traceback" not in result.stderr


@needs_matplotlib
def test_plot_given_a_folder_is_an_error(csv_file, tmp_path):
    result = run(
        "-m", "pkex_select", "rank", str(csv_file), "--target", "outcome", "--plot", str(tmp_path)
    )
    assert result.returncode == 2 and "is a folder; give a file name" in result.stderr
    assert not tmp_path.with_suffix(".png").exists()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_write_error_is_one_line():
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [sys.executable, "-m", "pkex_select"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            timeout=300,
        )
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "pkex-select: error: cannot write the output: No space left on device"
    )


def test_na_strings_in_text_columns_are_text(tmp_path):
    rng = np.random.default_rng(0)
    region = rng.choice(["NA", "EU", "AS"], size=120)
    frame = pd.DataFrame(
        {
            "region": region,
            "x": rng.normal(size=120),
            "label": np.where(region == "NA", "NA", "other"),
        }
    )
    frame.to_csv(tmp_path / "regions.csv", index=False)
    report, rows, stderr = rank_json(tmp_path / "regions.csv", "--target", "label")
    assert "missing" not in stderr and report["task"] == "classification"
    assert rows["region"]["rank"] == 1
    result = run(
        "-m",
        "pkex_select",
        "rank",
        str(tmp_path / "regions.csv"),
        "--target",
        "label",
        "--na-values",
        "NA",
    )
    dropped = int((region == "NA").sum())
    assert f"dropped {dropped} of 120 rows whose target 'label' is missing" in result.stderr
    # In a numeric column the usual NA strings still mean missing.
    frame["x"] = frame["x"].astype(object)
    frame.loc[3, "x"] = "NaN"
    frame.to_csv(tmp_path / "numbers.csv", index=False)
    result = run("-m", "pkex_select", "rank", str(tmp_path / "numbers.csv"), "--target", "label")
    assert result.returncode == 2 and "missing values in 'x'" in result.stderr


def test_ctrl_c_ends_with_one_line_and_status_130(tmp_path):
    import signal

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(50_000, 20)), columns=[f"x{j}" for j in range(20)])
    frame["y"] = frame["x0"] + rng.normal(size=50_000)
    frame.to_csv(tmp_path / "large.csv", index=False)
    # With the tests' permutations the fit runs for seconds after its progress appears (the
    # ranking alone ends within half a second of it, which a loaded machine can miss).
    command = ["rank", str(tmp_path / "large.csv"), "--target", "y", "--alpha", "0.05"]
    process = subprocess.Popen(
        [sys.executable, "-m", "pkex_select", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        # A job started in the background of a shell inherits SIGINT ignored; a user's
        # terminal delivers it, so give the command the default disposition.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    shown = b""
    while b"chunk" not in shown:  # the progress display is up: the fit is running
        data = os.read(process.stderr.fileno(), 4096)  # unbuffered: communicate reads the rest
        assert data, "the command ended before its progress appeared"
        shown += data
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130
    text = (shown + err).decode()
    assert text.replace("\r", "\n").strip().splitlines()[-1] == "pkex-select: interrupted"
    assert "Traceback" not in text and out == b""


def test_dates_are_times_and_identifiers_are_named(tmp_path):
    rng = np.random.default_rng(1)
    days = pd.date_range("2021-01-01", periods=200)
    frame = pd.DataFrame(
        {
            "when": days.strftime("%Y-%m-%d"),
            "order": [f"u{i}" for i in range(200)],
            "x": rng.normal(size=200),
        }
    )
    frame["price"] = np.arange(200) / 50 + 0.2 * rng.normal(size=200)  # a trend in time
    frame.to_csv(tmp_path / "sales.csv", index=False)
    report, rows, stderr = rank_json(tmp_path / "sales.csv", "--target", "price")
    assert "column 'when' read as dates, in days since 1970-01-01" in stderr
    assert rows["when"]["rank"] == 1 and rows["when"]["share"] > 0.9
    # A text column with a value of its own in every row is named, not silently zero.
    assert "categorical column order has 200 distinct values" in stderr


def _rank(capsys, path, *flags):
    """The CLI in this process: exit status, stdout, stderr."""
    from pkex_select.__main__ import main

    status = main(["rank", str(path), *flags])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def planted(tmp_path):
    rng = np.random.default_rng(4)
    frame = pd.DataFrame(rng.normal(size=(60, 4)).round(3), columns=["a", "b", "c", "d"])
    frame["y"] = (2 * frame["a"] + 0.1 * rng.normal(size=60)).round(3)
    return frame


@pytest.mark.parametrize("suffix, sep", [(".csv", ";"), (".tsv", "\t"), (".txt", "|")])
def test_separators_are_found(capsys, tmp_path, planted, suffix, sep):
    path = tmp_path / f"data{suffix}"
    decimal = "," if sep == ";" else "."
    planted.to_csv(path, sep=sep, decimal=decimal, index=False)
    status, out, err = _rank(capsys, path, "--target", "y", "--k", "1", "--json")
    assert status == 0, err
    report = json.loads(out)
    assert [f["feature"] for f in report["features"] if f["selected"]] == ["a"]
    assert report["game"] == "model+anova"


def test_header_problems_are_named(capsys, tmp_path, planted):
    path = tmp_path / "dup.csv"
    path.write_text("y,a,y\n1,2,3\n4,5,6\n")
    status, _, err = _rank(capsys, path, "--target", "y")
    assert status == 2 and "more than one column named 'y'" in err
    spaced = tmp_path / "spaced.csv"
    planted.rename(columns={"y": " y"}).to_csv(spaced, index=False)
    status, _, err = _rank(capsys, spaced, "--target", "y")
    assert status == 2 and "did you mean ' y', with its spaces?" in err


def test_a_saved_index_is_dropped_and_percents_are_numbers(capsys, tmp_path, planted):
    planted["b"] = planted["b"].map(lambda v: f"{v:.1f}%")
    path = tmp_path / "indexed.csv"
    planted.to_csv(path)  # pandas writes its index as an unnamed first column
    status, out, err = _rank(capsys, path, "--target", "y", "--k", "1", "--json")
    assert status == 0, err
    assert "saved row index" in err and "'b' read as numbers" in err
    assert {f["feature"] for f in json.loads(out)["features"]} == {"a", "b", "c", "d"}


def test_a_stray_word_in_a_numeric_column_is_named(capsys, tmp_path, planted):
    planted["b"] = planted["b"].astype(object)
    planted.loc[4, "b"] = "n/a?"
    path = tmp_path / "stray.csv"
    planted.to_csv(path, index=False)
    status, _, err = _rank(capsys, path, "--target", "y", "--k", "1")
    assert status == 0, err
    assert "'b' is numeric except in 1 row (such as 'n/a?' in row 6 of the file)" in err
    status, _, err = _rank(
        capsys, path, "--target", "y", "--k", "1", "--na-values", "n/a?", "--missing", "drop"
    )
    assert status == 0 and "numeric except" not in err and "dropped 1 of" in err
    # "NA" in every row: no numbers to name the other cells by (it crashed the note).
    planted["b"] = "NA"
    planted.to_csv(path, index=False)
    status, _, err = _rank(capsys, path, "--target", "y", "--k", "1")
    assert status == 0 and "numeric except" not in err


def test_money_durations_and_windows_encodings_are_read_as_meant(capsys, tmp_path, planted):
    frame = planted.rename(columns={"a": "Größe"})
    frame["b"] = frame["b"].map(lambda v: f"${1000 * v:,.2f}")  # "$-1,234.00"
    frame["c"] = pd.to_timedelta(frame["c"] + 5, unit="h").astype(str)  # "0 days 04:12:36"
    path = tmp_path / "windows.csv"
    frame.to_csv(path, index=False, encoding="cp1252")
    status, out, err = _rank(capsys, path, "--target", "y", "--k", "1", "--json")
    assert status == 0, err
    assert "not UTF-8; read as cp1252" in err
    assert "'b' read as numbers (currency signs" in err and "'c' read as durations" in err
    assert "identifier" not in err
    report = json.loads(out)
    assert [f["feature"] for f in report["features"] if f["selected"]] == ["Größe"]
    # A ;-separated file's decimal mark is ",", its thousands separator "."; "1,5%" in a
    # file whose decimal mark is "." is not a number.
    frame = planted.copy()
    frame["b"] = frame["b"].map(lambda v: f"€{1000 * v:,.2f}".translate({44: 46, 46: 44}))
    frame["c"] = frame["c"].map(lambda v: f"{v:.1f}%".replace(".", ","))
    frame.to_csv(path, sep=";", index=False)
    status, _, err = _rank(capsys, path, "--target", "y", "--k", "1")
    assert status == 0 and "'b' read as numbers" in err and "'c' read as numbers" in err, err
    frame.to_csv(path, sep=",", index=False)
    status, _, err = _rank(capsys, path, "--target", "y", "--k", "1")
    assert status == 0 and "'c' read as numbers" not in err
    # Excel's "Unicode text" is UTF-16 with a byte-order mark; a zip file is not text.
    planted.to_csv(path, sep="\t", index=False, encoding="utf-16")
    status, out, err = _rank(capsys, path, "--target", "y", "--k", "1", "--json")
    assert status == 0 and "note" not in err, err
    path.write_bytes(b"PK\x03\x04\x00\x00a,b")
    status, _, err = _rank(capsys, path, "--target", "y")
    assert status == 2 and "NUL bytes, so it is not a text file" in err


def test_too_few_rows_say_why_and_what_to_do(capsys, tmp_path, planted):
    path = tmp_path / "tiny.csv"
    planted.iloc[:3].to_csv(path, index=False)
    status, _, err = _rank(capsys, path, "--target", "y")
    assert status == 2 and "at least 4 samples; got 3" in err
    assert "--value-function baseline" in err and "value_function=" not in err
    planted.iloc[:6].to_csv(path, index=False)
    status, out, err = _rank(capsys, path, "--target", "y")
    assert status == 0, err
    assert "fewer than 10 rows are too few for tests" in out and "takes long" not in out


def test_parquet_files_are_read_as_parquet(capsys, tmp_path, planted):
    pytest.importorskip("pyarrow")
    path = tmp_path / "data.parquet"
    planted.to_parquet(path)
    status, out, err = _rank(capsys, path, "--target", "y", "--k", "1", "--json")
    assert status == 0, err and json.loads(out)["features"][0]["feature"] == "a"


def test_missing_values_are_refused_dropped_or_imputed(capsys, tmp_path, planted):
    planted.loc[[3, 7], "c"] = np.nan
    path = tmp_path / "holes.csv"
    planted.to_csv(path, index=False)
    status, _, err = _rank(capsys, path, "--target", "y", "--k", "1")
    assert status == 2 and "--missing drop" in err and "'c'" in err
    status, _, err = _rank(capsys, path, "--target", "y", "--k", "1", "--missing", "drop")
    assert status == 0 and "dropped 2 of 60 rows" in err
    status, _, err = _rank(capsys, path, "--target", "y", "--k", "1", "--missing", "impute")
    assert status == 0 and "filled the missing values of 'c'" in err


def test_messages_use_the_flags_and_the_columns(capsys, tmp_path, planted):
    path = tmp_path / "data.csv"
    planted.to_csv(path, index=False)
    status, _, err = _rank(capsys, path, "--target", "y", "--task", "classification")
    assert status == 2 and "--task regression" in err and "target_kernel" not in err
    status, _, err = _rank(capsys, path, "--target", "y", "--permutations", str(10**12))
    assert status == 2 and "--permutations 1000000000000" in err and "use at most" in err
    planted.loc[5, "d"] = np.inf
    planted.to_csv(path, index=False)
    status, _, err = _rank(capsys, path, "--target", "y")
    assert status == 2 and "infinite values in 'd'" in err


def test_the_default_stars_the_columns_y_depends_on(capsys, tmp_path):
    """Not a fixed 20% (four of twenty): the two planted columns and no noise."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(300, 20)), columns=[f"x{j}" for j in range(20)])
    frame["y"] = frame["x0"] + np.sin(2 * frame["x1"]) + 0.5 * rng.normal(size=300)
    path = tmp_path / "two.csv"
    frame.to_csv(path, index=False)
    status, out, err = _rank(capsys, path, "--target", "y", "--json")
    assert status == 0, err
    report = json.loads(out)
    assert report["selection"] == "adjusted p-value <= 0.05" and report["game"] == "pairwise_anova"
    assert sorted(f["feature"] for f in report["features"] if f["selected"]) == ["x0", "x1"]


def test_fdr_stars_what_the_knockoffs_select(capsys, tmp_path):
    """Eight relevant columns among twenty: --fdr stars them, with few false ones."""
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(rng.normal(size=(400, 20)), columns=[f"x{j}" for j in range(20)])
    frame["y"] = frame.iloc[:, :8].sum(axis=1) + rng.normal(size=400)
    path = tmp_path / "knock.csv"
    frame.to_csv(path, index=False)
    status, out, err = _rank(capsys, path, "--target", "y", "--fdr", "0.2", "--json")
    assert status == 0, err
    report = json.loads(out)
    assert report["selection"].startswith("knockoffs at false discovery rate 0.2")
    chosen = {f["feature"] for f in report["features"] if f["selected"]}
    assert len(chosen & {f"x{j}" for j in range(8)}) >= 6 and len(chosen) <= 10


def test_fdr_that_selects_nothing_says_why_in_flags(capsys, tmp_path):
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(rng.normal(size=(300, 8)), columns=[f"x{j}" for j in range(8)])
    frame["y"] = frame["x0"] + rng.normal(size=300)
    path = tmp_path / "one.csv"
    frame.to_csv(path, index=False)
    status, out, err = _rank(capsys, path, "--target", "y", "--fdr", "0.2")
    assert status == 0 and "selected (0 of 8)" in out
    assert "at least 5 features" in err and "--alpha (every feature" in err and "--k" in err
    assert "n_features_to_select" not in err


def test_the_model_games_header_does_not_claim_the_values_add_up(capsys, tmp_path, planted):
    path = tmp_path / "planted.csv"
    planted.to_csv(path, index=False)
    status, out, _ = _rank(capsys, path, "--target", "y", "--k", "2")
    assert status == 0 and "Game: the model's, with the ANOVA game's beside it" in out
    assert "plus 0.3 times its share" in out and "the values add up to it" not in out
    flags = ("--k", "2", "--value-function", "model")
    status, out, _ = _rank(capsys, path, "--target", "y", *flags)
    assert status == 0 and "Game: the model's. A kernel ridge" in out
    assert "not of this" in out and "the values add up to it" not in out


@pytest.mark.parametrize("suffix", [".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zip", ".tsv.gz"])
def test_compressed_files_are_read_as_pandas_reads_them(capsys, tmp_path, planted, suffix):
    path = tmp_path / f"data{suffix}"
    sep = "\t" if suffix.startswith(".tsv") else ";"
    planted.to_csv(path, sep=sep, decimal="," if sep == ";" else ".", index=False)
    status, out, err = _rank(capsys, path, "--target", "y", "--k", "1", "--json")
    assert status == 0, err
    report = json.loads(out)
    assert [f["feature"] for f in report["features"] if f["selected"]] == ["a"]


def test_a_zip_of_several_files_says_which_to_extract(capsys, tmp_path, planted):
    import zipfile

    path = tmp_path / "two.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("a.csv", planted.to_csv(index=False))
        archive.writestr("b.csv", planted.to_csv(index=False))
    status, _, err = _rank(capsys, path, "--target", "y")
    assert status == 2 and "exactly one file" in err and "holds 2" in err


@pytest.mark.parametrize("sep", ["ab", "", "\n"])
def test_a_separator_of_other_than_one_character_is_refused(capsys, tmp_path, planted, sep):
    path = tmp_path / "data.csv"
    planted.to_csv(path, index=False)
    with pytest.raises(SystemExit) as exit_:
        _rank(capsys, path, "--target", "y", "--sep", sep)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "--sep: expected one character" in err
    assert "Traceback" not in err


def test_a_typed_tab_separator_is_a_tab(capsys, tmp_path, planted):
    path = tmp_path / "data.txt"
    planted.to_csv(path, sep="\t", index=False)
    status, out, err = _rank(capsys, path, "--target", "y", "--k", "1", "--sep", "\\t", "--json")
    assert status == 0, err and json.loads(out)["features"][0]["feature"] == "a"


def test_duplicate_names_in_a_wide_header_are_found(capsys, tmp_path):
    names = [f"c{j}" for j in range(40_000)] + ["c17", "c39999", "y"]
    path = tmp_path / "wide.csv"
    path.write_text(",".join(names) + "\n" + ",".join(["1"] * len(names)) + "\n")
    status, _, err = _rank(capsys, path, "--target", "y")
    assert status == 2 and "'c17', 'c39999'" in err


def test_the_help_text_states_the_validation_limits():
    from pkex_select import __main__ as cli
    from pkex_select import _validation

    assert cli._MAX_CLASSES == _validation.MAX_CLASSES
    assert cli._MIN_SAMPLES_PER_CLASS == _validation.MIN_SAMPLES_PER_CLASS


def test_the_command_starts_without_numpy():
    """So that Ctrl-C in the first second is answered by the command, not a traceback."""
    code = "import sys, pkex_select.__main__; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("delay", [0.25, 0.5, 1.0, 2.0])
def test_ctrl_c_early_is_a_clean_interruption(tmp_path, delay):
    """From a quarter of a second on (before it, the interpreter itself may be starting),
    including while NumPy's compiled modules load, which turn an interrupt into an
    ImportError unless it is held back. The demo runs 99999 permutations so that it is
    still at work when the signal comes: one that lands after its last line of Python is
    not seen (status 0) or ends the interpreter's shutdown (killed by SIGINT)."""
    import signal
    import time

    process = subprocess.Popen(
        [sys.executable, "-m", "pkex_select", "--permutations", "99999"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # As above: a test run started in the background inherits SIGINT ignored, which the
        # command then rightly ignores; a user's terminal delivers it.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    time.sleep(delay)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert "Traceback" not in err
    assert process.returncode == 130 and "pkex-select: interrupted" in err


@pytest.mark.parametrize(
    "rows, flags, advice",
    [
        (60, ["--value-function", "model", "--alpha", "0.05"], ["--value-function", "auto"]),
        (3, ["--value-function", "anova"], ["--value-function", "baseline"]),
        (3, [], ["--value-function", "baseline"]),
    ],
)
def test_refusals_advise_flags_that_work(capsys, tmp_path, planted, rows, flags, advice):
    path = tmp_path / "data.csv"
    planted.iloc[:rows].to_csv(path, index=False)
    status, _, err = _rank(capsys, path, "--target", "y", *flags)
    assert status == 2 and " ".join(advice) in err and "value_function=" not in err
    # What it advises works: the refused flags with the advice in their place.
    kept = [f for f in flags if f not in ("--value-function", "model", "anova")]
    status, _, err = _rank(capsys, path, "--target", "y", *kept, *advice)
    assert status == 0, err


def test_knockoffs_on_a_text_column_advise_alpha_which_works(capsys, tmp_path, planted):
    path = tmp_path / "text.csv"
    planted.assign(t=np.where(planted.a > 0, "x", "z")).to_csv(path, index=False)
    status, _, err = _rank(capsys, path, "--target", "y", "--fdr", "0.2")
    assert status == 2 and "select with --alpha" in err and "--fdr builds" in err
    status, _, err = _rank(capsys, path, "--target", "y", "--alpha", "0.05")
    assert status == 0, err


def test_python_keeps_its_own_spelling():
    from pkex_select import HSICShapleySelector

    X = np.random.default_rng(0).normal(size=(3, 2))
    with pytest.raises(ValueError, match="Rank so few with value_function='baseline'"):
        HSICShapleySelector().fit(X, X[:, 0])


def test_encoding_flag_reads_what_the_rule_cannot(capsys, tmp_path):
    """A Cyrillic file is not UTF-8: read as cp1252 its names are garbled and the note names
    --encoding; with --encoding cp1251 they are right; an unknown or wrong one is an error."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"город": rng.choice(["Москва", "Омск"], 80), "цена": rng.normal(size=80)})
    frame["y"] = (frame["город"] == "Москва") + frame["цена"] + 0.3 * rng.normal(size=80)
    path = tmp_path / "ru.csv"
    frame.to_csv(path, index=False, encoding="cp1251")
    status, out, err = _rank(capsys, path, "--target", "y", "--k", "1")
    assert status == 0 and "read as cp1252" in err and "--encoding cp1251" in err
    assert "город" not in out
    status, out, err = _rank(capsys, path, "--target", "y", "--k", "1", "--encoding", "cp1251")
    assert status == 0 and "город" in out and "цена" in out and "not UTF-8" not in err
    status, _, err = _rank(capsys, path, "--target", "y", "--encoding", "UTF8")
    assert status == 2 and "cannot read" in err and "as utf-8" in err and "--encoding" in err
    with pytest.raises(SystemExit):
        _rank(capsys, path, "--target", "y", "--encoding", "klingon")
    assert "unknown encoding 'klingon'" in capsys.readouterr().err


def test_empty_files_and_bytes_past_the_sniffed_head_say_what_to_do(capsys, tmp_path):
    """The encoding is found from the file's first MiB; a later byte that is not UTF-8 is an
    error naming --encoding (not pandas' offset within its own chunk), and an empty file or
    one of blank lines is called empty."""
    rng = np.random.default_rng(0)
    rows = [f"{rng.normal():.4f},x{i % 3},{rng.normal():.4f}" for i in range(60_000)]
    path = tmp_path / "mixed.csv"
    path.write_bytes(
        ("a,b,y\n" + "\n".join(rows) + "\n").encode() + "0.5,café,0.3\n".encode("cp1252")
    )
    status, _, err = _rank(capsys, path, "--target", "y", "--k", "1")
    assert status == 2 and "as utf-8: part of it is not utf-8 text" in err and "--encoding" in err
    for content in ("", "\n\n\n"):
        path.write_text(content)
        status, _, err = _rank(capsys, path, "--target", "y")
        assert status == 2 and "it is empty (not even a header row)" in err


def test_an_empty_column_is_dropped_with_a_note(capsys, tmp_path, planted):
    """A column without a value tells nothing about y: dropped whatever --missing says."""
    path = tmp_path / "data.csv"
    planted.assign(blank=np.nan).to_csv(path, index=False)
    for flags in ([], ["--missing", "impute"], ["--missing", "drop"]):
        status, out, err = _rank(capsys, path, "--target", "y", "--k", "1", *flags)
        assert status == 0 and "dropped 'blank', which has no values" in err
        assert "blank" not in out
    planted.assign(blank=np.nan, empty=np.nan).to_csv(path, index=False)
    status, _, err = _rank(capsys, path, "--target", "y", "--k", "1")
    assert status == 0 and "dropped 'blank', 'empty', which have no values" in err
    pd.DataFrame({"blank": [np.nan] * 20, "y": np.arange(20.0)}).to_csv(path, index=False)
    status, _, err = _rank(capsys, path, "--target", "y")
    assert status == 2 and "every feature column is empty" in err


def test_ctrl_c_inside_a_compiled_function_is_an_interruption(
    capfd, monkeypatch, planted, tmp_path
):
    """numba's dispatcher reports a KeyboardInterrupt that arrives as it returns as a
    SystemError caused by it (seen once in 50 interrupted demos)."""
    from pkex_select import __main__ as cli

    def interrupted_in_numba(*args, **kwargs):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as interrupt:
            raise SystemError(
                "CPUDispatcher(...) returned a result with an exception set"
            ) from interrupt

    monkeypatch.setattr(cli, "rank", interrupted_in_numba)
    planted.to_csv(tmp_path / "data.csv", index=False)
    # capfd: an interrupted command points its stdout's file descriptor at the null device.
    status, out, err = _rank(capfd, tmp_path / "data.csv", "--target", "y")
    assert status == 130 and out == "" and err.strip() == "pkex-select: interrupted"

    def broken(*args, **kwargs):
        raise SystemError("a bug, not an interruption")

    monkeypatch.setattr(cli, "rank", broken)
    with pytest.raises(SystemError, match="a bug"):
        _rank(capfd, tmp_path / "data.csv", "--target", "y")


def test_thousands_separators_are_read_by_the_files_decimal_mark(capsys, tmp_path):
    """A ;-separated file writes decimals with "," and groups thousands with ".": "4.253"
    is 4253 (pandas alone reads 4.253 beside 997, mixing scales silently) and "1.234,5"
    is 1234.5. Without a decimal comma anywhere "0.125" may be a decimal point and stays
    so. In a ,-separated file a quoted "4,253" is 4253 and "1,2" stays text."""
    from pkex_select._reading import _read_table

    path = tmp_path / "grouped.csv"
    path.write_text("n;amount;y\n4.253;1.234,5;2,5\n997;12,25;-0,5\n1.000.001;7;1\n")
    frame = _read_table(path, None)
    assert frame["n"].tolist() == [4253, 997, 1000001]
    assert frame["amount"].tolist() == [1234.5, 12.25, 7.0]
    assert frame["y"].tolist() == [2.5, -0.5, 1.0]
    err = capsys.readouterr().err
    assert "column 'n' read with '.' grouping its thousands ('4.253'" in err
    assert "column 'amount' read with '.' grouping" in err and "'y'" not in err
    path.write_text("n;y\n0.125;2.5\n12.500;-0.5\n")  # no decimal comma: points stay points
    assert _read_table(path, None)["n"].tolist() == [0.125, 12.5]
    assert "grouping" not in capsys.readouterr().err
    path.write_text('n,pair,y\n"4,253","1,2",2.5\n997,"3,4",-0.5\n"12,000","5,6",1.0\n')
    frame = _read_table(path, None)
    assert frame["n"].tolist() == [4253, 997, 12000]
    assert frame["pair"].tolist() == ["1,2", "3,4", "5,6"]
    assert "column 'n' read as numbers (thousands separators dropped)" in capsys.readouterr().err
