"""Sphinx configuration: numpydoc API pages, a sphinx-gallery of the examples, offline build.

python -m sphinx -W -b html docs docs/_build/html
"""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("MPLBACKEND", "Agg")

import pkex_select  # noqa: E402

project = "pkex-select"
author = "pkex-select developers"
copyright = "2026, pkex-select developers"
release = version = pkex_select.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    # MathJax copied into the build, so that equations render offline.
    "sphinx-mathjax-offline",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
templates_path = ["_templates"]
exclude_patterns = [
    "_build",
    "auto_examples/*.ipynb",
    "auto_examples/*.py",
    "auto_examples/*.zip",
    "auto_examples/*.json",
    "auto_examples/*.md5",
]

autosummary_generate = True
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks = set()

# Every cross-reference inside the package must resolve (a broken one fails the -W build);
# references to other projects' objects are plain text (no intersphinx: the build is offline).
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(sklearn|numpy|np|scipy|pandas|pd|joblib|shap|shapiq|matplotlib|dask)\b.*"),
    (r"py:.*", r"(ndarray|array-like|str|int|float|bool|list|tuple|dict|callable|object)"),
]

sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "abort_on_example_error": True,
    "download_all_examples": False,
    "remove_config_comments": True,
    "show_memory": False,
    "within_subsection_order": "FileNameSortKey",
    # "Examples using this class" on the API pages.
    "backreferences_dir": "generated/backreferences",
    "doc_module": ("pkex_select",),
}

html_theme = "pydata_sphinx_theme"
html_title = "pkex-select"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
html_static_path = []
