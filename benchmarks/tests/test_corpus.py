"""benchmarks.corpus: a record checks against itself, and a changed entry is reported."""

import pickle

from benchmarks.corpus import __main__ as corpus


def test_a_record_checks_and_a_change_is_caught(tmp_path, capsys, monkeypatch):
    # A small corpus: the selector cases on one data set, the explainer and the CLI left out.
    monkeypatch.setattr(corpus, "SELECTORS", {"k": {"n_features_to_select": 3}})
    monkeypatch.setattr(corpus, "CLI_CASES", ([], ["--k", "3"]))
    record = tmp_path / "corpus.pkl"
    assert corpus.main(["--record", str(record)]) == 0
    assert corpus.main(["--check", str(record)]) == 0
    assert "bit for bit the same" in capsys.readouterr().out

    recorded = pickle.loads(record.read_bytes())
    values = recorded["hsic/regression/k"]["shapley_values_"]
    values[0] = values[0] + 1e-15 * abs(values[0])  # one last digit
    recorded["cli/regression/--k 3"] = (0, "another table", "")
    record.write_bytes(pickle.dumps(recorded))
    assert corpus.main(["--check", str(record)]) == 1
    out = capsys.readouterr().out
    assert "changed: hsic/regression/k" in out and "changed: cli/regression/--k 3" in out
