"""Docstring entries the public functions and estimators share, written once.

A docstring line ``{{name}}``, indented as the entry would be, stands for ``ENTRIES[name]``.
:func:`shared_docstring` fills it in when the module is imported, so ``help()``, Sphinx and
the doctests read the whole text; a name not here fails the import.
"""

import re

__all__ = ["ENTRIES", "shared_docstring"]

ENTRIES = {
    "correction": """\
correction : {"maxT", "holm", "fdr_bh"}, default="maxT"
    The correction of the per-feature p-values for multiplicity.""",
    "result_interactions": """\
interactions : {"SII", "BII", "STII", "k-SII", "Moebius"}, default=None
    Also the pairwise interaction index, in the result's ``interaction_values``.""",
    "random_state": """\
random_state : int, RandomState instance or None, default=None
    Permutations, block partitions and row subsamples (the selector's model game draws
    the rows of its checks above 200 rows, so two unseeded fits can differ where a
    feature sits at one of its bars); an int repeats the result.""",
    "n_jobs": """\
n_jobs : int, default=None
    Parallel tasks on threads, as joblib counts ``n_jobs``.""",
    "verbose": """\
verbose : int, default=0
    A progress bar on stderr with the time left (tqdm's when it is installed,
    ``pip install "pkex-select[progress]"``; else a line updated every two seconds).""",
    "estimator": """\
estimator : str, default="deprecated"
    Deprecated since 0.2 (scikit-learn's ``estimator`` is a model): use ``estimate``.
    Removed in 0.3.""",
    "n_features_to_select": """\
n_features_to_select : int or float, default=0.2
    Number of features to keep, or a fraction of them (rounded up).""",
    "threshold": """\
threshold : float or str, default=None
    When given, keep every feature whose value is at least ``threshold`` instead:
    a number, or as in scikit-learn's SelectFromModel "mean", "median" or a multiple
    such as "1.5*mean" of the values of the features that vary.""",
    "kernel": """\
kernel : {"rbf", "laplacian", "cauchy"}, default="rbf"
    Kernel factor of the numeric features.""",
    "categorical_features": """\
categorical_features : "from_dtype", array-like of int, str or bool, or None, default="from_dtype"
    Columns compared with the delta kernel (1 if equal, else 0); they may hold strings.
    "from_dtype": a data frame's columns of text, category or other non-numeric dtype
    (as ``HistGradientBoostingClassifier`` reads them); none for an array. None: every
    column must be numeric.""",
    "block_size": """\
block_size : int, default=20
    Block estimator only: the samples per block.""",
    "interactions": """\
interactions : {"SII", "BII", "STII", "k-SII", "Moebius"}, default=None
    Also compute the pairwise interaction index of the statistic's game,
    ``interaction_values_`` (see :func:`pkex_select.interaction_values`). About as costly
    as the values themselves, more for large d (a d x d matrix product per node).""",
    "memory": """\
memory : str, joblib.Memory or None, default=None
    Caches the attribution (values, p-values, interactions) on disk, keyed on the data
    and every parameter except ``n_features_to_select``, ``threshold``, ``alpha``,
    ``n_jobs`` and ``verbose``: in a grid search over how many features to keep, each
    fold's ranking is computed once. A str is a cache folder. ``alpha`` enters the key only
    through the permutation count it asks for. With ``random_state=None`` a cached fit
    reuses the permutations of the first.""",
    "estimate_": """\
estimate_ : str
    The estimate attributed: ``estimate``, or what "auto" chose at this size.""",
    "n_repetitions_": """\
n_repetitions_ : int
    The block partitions (``n_repetitions``, or what "auto" chose at this size; used by
    the block estimator only).""",
    "scales_": """\
scales_ : tuple of float
    The bandwidth scales used.""",
    "ranking_": """\
ranking_ : ndarray of shape (`n_features_in_`,)
    1 for the largest value, 2 for the next, ... Constant features carry no information:
    they rank last and are never selected, whatever ``threshold`` is.""",
    "n_permutations_": """\
n_permutations_ : int
    The permutations run: ``n_permutations`` (or what None resolved to), or with
    ``alpha`` and the maxT correction fewer (157 or 471 at ``alpha=0.05``) where every
    decision at ``alpha`` was settled by them (resampling risk at most 0.001 in all); the
    p-values then have a resolution of 1 / (1 + ``n_permutations_``). With fewer
    permutations than samples they are circular shifts of the labels, all computed in one
    pass (User guide, "Tests and p-values").""",
    "n_features_in_": """\
n_features_in_ : int""",
}

_PLACEHOLDER = re.compile(r"^( *)\{\{(\w+)\}\}$", re.MULTILINE)


def shared_docstring(documented):
    """Fill the ``{{name}}`` lines of ``documented``'s docstring (a decorator)."""

    def entry(match):
        indent, name = match.groups()
        return "\n".join(indent + line if line else line for line in ENTRIES[name].split("\n"))

    documented.__doc__ = _PLACEHOLDER.sub(entry, documented.__doc__)
    return documented
