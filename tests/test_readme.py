"""The README's Python blocks run as pasted, each in a fresh namespace, and print what
their comments say."""

import re
from pathlib import Path

import numpy as np
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


def test_the_readme_has_its_three_blocks():
    assert len(BLOCKS) == 3


def _claims(block):
    """Each ``print(expression)  # claim`` line of a block."""
    return re.findall(r"^print\((.+)\)  # (.+)$", block, flags=re.MULTILINE)


def _check(claim, value, namespace):
    """Whether a comment's claim about a printed value holds; None if it makes no checkable
    claim (a description)."""
    literal = re.match(r"(\[[^\]]*\])", claim)
    if literal:
        return str(np.asarray(value)) == literal.group(1)
    all_but = re.match(r"all but '([^']+)'", claim)
    if all_but:
        columns = set(namespace["X"].columns)
        return set(value) == columns - {all_but.group(1)}
    equals = re.match(r"== (.+)$", claim)
    if equals:
        return bool(np.allclose(value, eval(equals.group(1), namespace)))
    return None


@pytest.mark.parametrize("block", BLOCKS, ids=["select", "drift", "explain"])
def test_block_runs_as_pasted_and_prints_what_its_comments_say(block, tmp_path, monkeypatch):
    if "plotting." in block:
        matplotlib = pytest.importorskip("matplotlib")
        matplotlib.use("Agg")
    if "to_shap" in block:
        pytest.importorskip("shap")
    monkeypatch.chdir(tmp_path)  # nothing the block writes lands in the project
    namespace = {"__name__": "__readme__"}
    exec(compile(block, str(README), "exec"), namespace)
    checked = 0
    for expression, claim in _claims(block):
        verdict = _check(claim, eval(expression, namespace), namespace)
        assert verdict is not False, f"README: print({expression})  # {claim}"
        checked += verdict is not None
    assert checked >= 1  # every block prints at least one thing it states


def test_a_wrong_comment_is_caught():
    import pandas as pd

    namespace = {"X": pd.DataFrame(columns=["a", "b"])}
    assert _check("['a' 'b']: both", np.array(["a", "b"]), namespace)
    assert not _check("['a']: one", np.array(["a", "b"]), namespace)
    assert not _check("all but 'a'", ["a", "b"], namespace)
    assert _check("== 1 + 1", 2.0, namespace) and not _check("== 3", 2.0, namespace)
