"""The README's Python blocks run as pasted, each in a fresh namespace."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


def test_the_readme_has_its_three_blocks():
    assert len(BLOCKS) == 3


@pytest.mark.parametrize("block", BLOCKS, ids=["select", "drift", "explain"])
def test_block_runs_as_pasted(block, tmp_path, monkeypatch):
    if "plotting." in block:
        matplotlib = pytest.importorskip("matplotlib")
        matplotlib.use("Agg")
    if "to_shap" in block:
        pytest.importorskip("shap")
    monkeypatch.chdir(tmp_path)  # memory="cache" writes its folder here
    exec(compile(block, str(README), "exec"), {"__name__": "__readme__"})
