"""The documentation covers the public API (the site itself is built in CI with -W)."""

import re
from pathlib import Path

import pkex_select
from pkex_select import kernels, knockoffs, plotting

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _api_entries():
    text = (DOCS / "api.rst").read_text()
    return set(re.findall(r"^   ([\w.]+)$", text, flags=re.MULTILINE))


def test_every_public_name_has_an_api_page():
    entries = _api_entries()
    missing = [name for name in pkex_select.__all__ if name not in entries]
    missing += [
        f"plotting.{name}" for name in plotting.__all__ if f"plotting.{name}" not in entries
    ]
    for module in (kernels, knockoffs):
        prefix = module.__name__.split(".")[-1]
        missing += [
            f"{prefix}.{name}"
            for name in module.__all__
            if callable(getattr(module, name)) and f"{prefix}.{name}" not in entries
        ]
    assert not missing, f"add to docs/api.rst: {missing}"


def test_every_guide_page_is_in_the_toctree():
    index = (DOCS / "user_guide" / "index.rst").read_text()
    pages = {path.stem for path in (DOCS / "user_guide").glob("*.rst")} - {"index"}
    assert pages <= set(re.findall(r"^   (\w+)$", index, flags=re.MULTILINE))


def test_readme_stands_on_its_own():
    """Short, no relative links or images (they break on a package index page), and every
    file and benchmark it names exists."""
    root = DOCS.parent
    readme = (root / "README.md").read_text()
    assert len(readme.encode()) <= 10_000
    targets = re.findall(r"\]\(([^)]+)\)", readme)
    assert all(target.startswith("https://") for target in targets), targets
    for path in re.findall(r"`((?:docs|benchmarks)/[\w./]+|LICENSE|CITATION\.cff)`", readme):
        # Built files and the benchmarks (not in the sdist) are checked where they exist.
        if not path.startswith(("docs/_build", "benchmarks")):
            assert (root / path).exists(), path
    modules = re.findall(r"python -m (benchmarks(?:\.\w+)+)", readme)
    assert len(modules) >= 4
    for module in modules if (root / "benchmarks").is_dir() else []:
        assert (root / module.replace(".", "/")).with_suffix(".py").exists() or (
            root / module.replace(".", "/") / "__main__.py"
        ).exists(), module


def test_every_benchmark_has_a_docs_page():
    index = (DOCS / "benchmarks" / "index.rst").read_text()
    listed = set(re.findall(r"^   (\w+)$", index, flags=re.MULTILINE))
    with_results = {
        path.parent.parent.name for path in (DOCS.parent / "benchmarks").glob("*/results/*.md")
    }
    assert with_results <= listed
    assert all((DOCS / "benchmarks" / f"{name}.md").exists() for name in listed)


def test_the_sdist_carries_the_results_the_docs_include():
    manifest = (DOCS.parent / "MANIFEST.in").read_text()
    assert "graft docs" in manifest and "recursive-include benchmarks *.md" in manifest
    for page in DOCS.rglob("*.md"):
        for target in re.findall(r"\{include\} (\S+)", page.read_text()):
            path = (page.parent / target).resolve()
            assert path.is_file(), f"{page.name} includes {target}, which is missing"
            relative = path.relative_to(DOCS.parent)
            top_level = re.search(r"^include (.*)$", manifest, flags=re.MULTILINE).group(1)
            assert str(relative) in top_level.split() or (
                relative.parts[0] in ("docs", "benchmarks") and path.suffix == ".md"
            )


def test_design_notes_are_in_the_build_and_name_modules_that_exist():
    index = (DOCS / "index.rst").read_text()
    assert re.search(r"^   design$", index, flags=re.MULTILINE)
    design = (DOCS / "design.md").read_text()
    package = Path(pkex_select.__file__).resolve().parent
    layered = set(re.findall(r"^      (_?\w+) ", design, flags=re.MULTILINE))
    modules = {path.stem for path in package.glob("*.py")} - {"__init__"}
    assert layered == modules, (sorted(layered - modules), sorted(modules - layered))


def test_every_figure_the_readme_quotes_is_in_its_results():
    """Each number of the headline table's "measured" cell appears, to the digits it is
    quoted with, in the results files of the benchmark its row names."""
    root = DOCS.parent
    if not (root / "benchmarks").is_dir():
        return  # an sdist without the benchmarks
    readme = (root / "README.md").read_text()
    rows = re.findall(
        r"^\| .+? \| (.+?) \| `python -m (benchmarks[\w.]*)(?: [^`]*)?` \|$",
        readme,
        flags=re.MULTILINE,
    )
    assert len(rows) >= 8
    stale = []
    for measured, module in rows:
        results = root / Path(*module.split(".")[:2]) / "results"
        text = " ".join(p.read_text() for p in results.rglob("*") if p.suffix in (".md", ".csv"))
        found = [float(n) for n in re.findall(r"\d+(?:\.\d+)?", text)]
        for quoted in re.findall(r"(?<![\w.^])\d+(?:\.\d+)?(?![\w.])", measured.replace(",", "")):
            decimals = len(quoted.partition(".")[2])
            half_unit = 0.5 * 10.0**-decimals + 1e-9
            if not any(abs(value - float(quoted)) <= half_unit for value in found):
                stale.append(f"{module}: {quoted}")
    assert stale == [], stale


def test_the_docs_name_the_default_game_for_k():
    """The README, the guide pages and the CLI's help say what value_function="auto" ranks k
    features by, and which game the tests of alpha attribute."""
    from pkex_select import HSICShapleySelector
    from pkex_select.__main__ import _READING, _parser
    from pkex_select._questions import (
        RANKED_GAME_MAX_FEATURES,
        WHOLE_SAMPLE_MAX_FEATURES,
        resolve_value_function,
    )
    from pkex_select._selection import ANOVA_SHARE

    assert HSICShapleySelector._ranked_game == "model+anova"
    assert resolve_value_function("auto", True, 20, "model+anova") == "pairwise_anova"
    most = RANKED_GAME_MAX_FEATURES
    assert resolve_value_function("auto", False, most, "model+anova") == "model+anova"
    assert resolve_value_function("auto", False, most + 1, "model+anova") == "anova"
    docstring = " ".join(HSICShapleySelector.__doc__.split())
    assert f'"model+anova" up to {most} features' in docstring
    wider = f"up to {WHOLE_SAMPLE_MAX_FEATURES} where the model's rows hold the whole sample"
    assert wider in docstring
    selecting = " ".join((DOCS / "user_guide" / "selecting.rst").read_text().split())
    assert f"Beyond {most} features it ranks by the ANOVA game too" in selecting
    assert f"whole sample, up to {WHOLE_SAMPLE_MAX_FEATURES} features" in selecting
    readme = " ".join((DOCS.parent / "README.md").read_text().split())
    assert "Ask for k: a kernel ridge model of y" in readme
    assert "Set `alpha`: permutation tests of the kernel-ANOVA game's terms" in readme
    cli = (DOCS / "user_guide" / "cli.rst").read_text()
    assert re.search(
        r"``--k K``: .*?values of the model\s+game, with the ANOVA game's beside it",
        cli,
        flags=re.DOTALL,
    )
    reading = (DOCS / "user_guide" / "reading_values.rst").read_text()
    assert '``"model+anova"`` (the default\'s game for choosing k features)' in reading
    assert reading.count("the default's game for choosing k features") == 1
    # The weight of the ANOVA game's shares, wherever it is stated.
    weight = f"{ANOVA_SHARE:g} times"
    assert weight in reading and weight in " ".join(cli.split())
    assert weight in " ".join(HSICShapleySelector.__doc__.split())
    # The command line states it too (it does not import the selectors at start-up).
    assert f"plus {weight}" in " ".join(_READING["model+anova"].split())
    assert f"over {1 + ANOVA_SHARE:g}" in " ".join(_READING["model+anova"].split())
    help_text = " ".join(_parser().format_help().split())
    assert "the model game with the ANOVA game's beside it with --k" in help_text
