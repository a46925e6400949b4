"""Exact Shapley values of MMD^2: which features make two samples differ."""

from __future__ import annotations

import numpy as np
import scipy.sparse
from numpy.typing import ArrayLike

from . import _pairgame
from ._docstrings import shared_docstring
from ._gram import check_feature_grams
from ._ridge_game import ridge_targets
from ._selection import ShapleySelectorBase
from ._sklearn_compat import StrOptions, validate_params
from ._statistics import MMD, PARAMETER_CONSTRAINTS
from ._validation import RENAMED, from_arrow, holds_numbers, renamed_estimate

__all__ = ["MMDShapleyAttributor", "attribute_shift", "mmd_shapley_values"]

ESTIMATORS = ("biased", "unbiased", "block")


@validate_params(
    {
        "K": ["array-like"],
        "y": ["array-like"],
        "estimate": [StrOptions(set(ESTIMATORS))],
        "estimator": [StrOptions({*ESTIMATORS, RENAMED})],
        **PARAMETER_CONSTRAINTS,
        **_pairgame.ATTRIBUTION_CONSTRAINTS,
    },
    prefer_skip_nested_validation=True,
)
@shared_docstring
def mmd_shapley_values(
    K: ArrayLike,
    y: ArrayLike,
    *,
    estimate: str = "biased",
    block_size: int = 20,
    n_repetitions: int = 10,
    value_function: str = "baseline",
    anova_weight: str | float = "auto",
    scales: ArrayLike | None = None,
    n_permutations: int = 0,
    correction: str = "maxT",
    interactions: str | None = None,
    random_state: int | np.random.RandomState | None = None,
    n_jobs: int | None = None,
    verbose: int = 0,
    return_result: bool = False,
    estimator: str = RENAMED,
) -> np.ndarray | _pairgame.Attribution:
    """Exact Shapley values of MMD^2 with the product kernel of the per-feature Gram matrices.

    The game is ``v(S) = MMD^2(prod_{j in S} K[j])`` between the samples named by ``y``;
    removing a feature sets its Gram matrix to all ones. The values add up to the MMD^2
    estimate with all features (and v(empty) = 0). :class:`MMDShapleyAttributor` is this
    function on the Gram matrices of standardised data, with the same options; the defaults
    differ (the estimator chooses its estimate by the data's size, ``estimate_``).

    Parameters
    ----------
    K : array-like of shape (n_features, n_samples, n_samples) or (n_scales, n_features, \
            n_samples, n_samples)
        Symmetric per-feature Gram matrices of the pooled sample, with unit diagonal; with a
        leading axis, one stack per bandwidth scale (see :func:`hsic_shapley_values`).
    y : array-like of shape (n_samples,)
        Sample labels. With two labels P and Q the statistic is MMD^2(P, Q); with more it is
        the sum of MMD^2 over all pairs of samples.
    estimate : {"biased", "unbiased", "block"}, default="biased"
        "biased": the V-statistic ``||mean_P phi - mean_Q phi||^2``; "unbiased": the
        U-statistic without the diagonal terms (Gretton et al., 2012, eq. 3 and 5);
        "block": the incomplete U-statistic over the pairs within ``n_repetitions`` random
        partitions into blocks of ``block_size`` samples, an unbiased estimate of the
        unbiased MMD^2 in O(n B d^2) time, for very large samples.
    block_size, n_repetitions : int, default=20, 10
        Block estimator only: ``n_repetitions`` partitions of the samples into blocks of
        ``block_size`` (the scaling guide measures how closely the estimate follows the
        exact one).
    value_function : {"baseline", "observational", "anova", "pairwise_anova"}, \
            default="baseline"
        "anova": each ``K[j]`` is U-centred over the pooled sample (over each block for
        "block"), the factors are ``1 + K~[j]``, a removed one becomes all ones, and only
        pairs of distinct samples count (the default of :class:`MMDShapleyAttributor`);
        "pairwise_anova" keeps its interactions of at most two features (the attributor's
        game with permutations). Otherwise a removed feature's Gram matrix becomes all
        ones, or its mean over each cell, the
        pairs of two samples (P x P, Q x Q, P x Q), as in the published authors' code. The
        observational v(empty) is the MMD^2 of those cell means, not 0, and it already
        holds every feature's marginal drift (a shifted or widened feature has different
        cell means): the values split only what is left, so they do not point at drifted
        features. Use it to compare with that code; attribute drift with "baseline".
    anova_weight : "auto" or float in (0, 1], default="auto"
        The two ANOVA games only: the factors are ``1 + w K~[j]``, w = 1 up to 6
        features and 6 / d beyond for "auto" (see :class:`MMDShapleyAttributor`).
    scales : array-like of float, default=None
        The bandwidth scale of each stack of ``K``; by default 1, 2, ... (widest last).
    n_permutations : int, default=0
        When positive, the permutation tests of :class:`MMDShapleyAttributor`, in the
        result's ``tests`` (set ``return_result=True``).
    {{correction}}
    {{result_interactions}}
    {{random_state}}
    {{n_jobs}}
    {{verbose}}
    return_result : bool, default=False
        Return the whole :class:`~pkex_select.Attribution` rather than the values alone.

    {{estimator}}
    Returns
    -------
    values : ndarray of shape (n_features,), or Attribution when ``return_result`` is True

    References
    ----------
    Gretton et al. (2012), "A kernel two-sample test", JMLR 13.

    Examples
    --------
    >>> import numpy as np
    >>> from pkex_select import mmd_shapley_values
    >>> from pkex_select.kernels import gram_matrices
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(80, 3))
    >>> X[40:, 1] += 1.5                      # the second sample is shifted in feature 1
    >>> y = np.repeat(["before", "after"], 40)
    >>> values = mmd_shapley_values(gram_matrices(X, "rbf", 0.5), y)
    >>> int(np.argmax(values))
    1
    """
    K = check_feature_grams(K, "MMD")
    n = K.shape[-1]
    if len(y) != n:
        raise ValueError(f"y has {len(y)} labels for {n} samples.")
    return _pairgame.gram_attribution(
        MMD(renamed_estimate(estimate, estimator, stacklevel=4), block_size, n_repetitions),
        K,
        MMD.target(y),
        scales=scales,
        return_result=return_result,
        verbose=verbose,
        name="mmd_shapley_values",
        n_permutations=n_permutations,
        correction=correction,
        random_state=random_state,
        n_jobs=n_jobs,
        value_function=value_function,
        anova_weight=anova_weight,
        interactions=interactions,
    )


@shared_docstring
class MMDShapleyAttributor(ShapleySelectorBase):
    """Attribute the difference between samples (MMD^2) exactly to features.

    MMD^2 with a product kernel over features measures how much two samples differ; its exact
    Shapley values split it among the features, so the features that carry the difference
    stand out, interactions included (a change of correlation between two features is
    shared by both). With ``n_permutations``, permutation p-values say which attributions are
    significant. As a transformer it keeps the features that carry the difference.

    Parameters
    ----------
    {{n_features_to_select}}
    {{threshold}}
    estimate : {"auto", "biased", "unbiased", "block"}, default="auto"
        MMD^2 as a V-statistic (biased, never negative), a U-statistic (unbiased), or the
        incomplete U-statistic over pairs within random blocks of ``block_size`` samples
        (block: O(n B d^2) time, for samples of 10^5 rows and more; see
        :func:`mmd_shapley_values`). Permutation tests are exact for all three. "auto":
        "biased" up to 4 x 10^7 multiply-adds of pairs times features (n = 2000 at d = 20,
        about a second), "block" beyond it (with ``n_repetitions="auto"``, as many pairs);
        the choice is in ``estimate_``.
    {{block_size}}
    n_repetitions : int or "auto", default="auto"
        Block estimator only: partitions of the samples into blocks of ``block_size``; "auto"
        as in :class:`HSICShapleySelector` (``n_repetitions_`` holds the count used).
    {{kernel}}
    bandwidth : {"auto", "median", "alignment", "scott", "silverman", "std"} or float, \
            default="auto"
        Bandwidth rule, applied per feature to the pooled sample after standardising each
        feature to zero mean and unit variance over the pooled sample. "alignment" and
        "auto" as in :class:`HSICShapleySelector`, aligned with the sample labels.
    scales : "auto" or list of float, default="auto"
        Bandwidth scales: the statistic is attributed with the numeric bandwidths times
        each scale, and the games are added up, each divided by the standard deviation of
        its joint kernel over the pairs so that no scale dominates. "auto" is
        ``(1, sqrt(n_numeric_features))``: scale 1, one median-heuristic bandwidth per
        feature, resolves what each feature does on its own scale, while the product of
        d such factors is a kernel far narrower than the data; scale sqrt(d) gives a joint
        kernel about as wide as the joint median heuristic, which keeps the overall test
        as powerful as the standard kernel tests. ``scales=[1]`` attributes the
        single-scale statistic of the functions on Gram matrices, at half the cost.
    {{categorical_features}}
    n_permutations : int, default=None
        When positive, ``pvalue_`` (the permutation two-sample test) and ``pvalues_`` (one
        per feature). Each permutation of the labels re-weights the same pairs: one
        matrix-vector product per chunk of pairs. None: 0 without ``alpha``, else enough
        to select at ``alpha`` (see :class:`HSICShapleySelector`).
    correction : {"maxT", "holm", "fdr_bh"}, default="maxT"
        How ``adjusted_pvalues_`` correct the per-feature p-values for testing every
        feature; see :class:`HSICShapleySelector`.
    alpha : float in (0, 1), default=None
        When given, keep exactly the features whose adjusted p-value is at most ``alpha``;
        ``n_features_to_select`` is then ignored. With the default maxT correction, the
        chance of flagging any feature when nothing drifted is at most ``alpha`` (see
        :class:`HSICShapleySelector`).
    fdr : float in (0, 1), default=None
        Select by model-X knockoffs at this false discovery rate: the features whose
        distribution differs between the samples given the other features (as
        :class:`HSICShapleySelector`'s ``fdr``; knockoffs of the pooled sample, the
        statistic each feature's value minus its knockoff's). ``alpha`` instead keeps every
        feature that differs marginally, with the family-wise error controlled.
    knockoff_groups : array-like of shape (n_features,), "auto" or None, default="auto"
        As in :class:`HSICShapleySelector`.
    n_knockoffs : int, default=1
        As in :class:`HSICShapleySelector`.
    value_function : {"auto", "anova", "pairwise_anova", "model", "baseline", "observational"}, \
            default="auto"
        The game whose Shapley values are computed (see :class:`HSICShapleySelector`).
        "anova" centres each feature's kernel over the pooled sample: a feature that did
        not change gets about 0 and one that did a positive value, beside a dominant
        change too. It answers both of the attributor's questions, the k features that
        differ most and which features differ at a controlled error: its top k found the
        changed features as often as the paper's game ("baseline") over four kinds of
        change and more often than the model game ("model", a kernel classifier of the
        sample labels explained row by row), which is ahead only where a correlation alone
        changed; its tests keep more weak shifts (the selection guide has the
        measurements). "auto" is therefore "anova" here, and with permutations
        "pairwise_anova", its interactions of at most two features: two features that did
        not change but copy each other share the full game's terms with a changed
        feature, which permuting the labels removes (see :class:`HSICShapleySelector`).
        "observational" replaces a removed feature's Gram matrix by its mean over each
        cell (P x P, Q x Q, P x Q), as
        in the published authors' code; its v(empty), the MMD^2 of those means, already
        holds each feature's marginal drift, so the values split only what is left and do
        not point at drifted features. Its means change with the labels, so each
        permutation is a game of its own: a test costs one pass of the engine per
        permutation, not one matrix product.
    anova_weight : "auto" or float in (0, 1], default="auto"
        The weight w of the ANOVA game's factors ``1 + w K~_j``; an interaction of q
        features carries w^q. "auto": 1 up to 6 features, 6 / d beyond. A smaller w
        favours main effects, a larger one interactions (measured for HSIC; see
        :class:`HSICShapleySelector`). Used by the two ANOVA games only.
    {{interactions}}
    random_state : int, RandomState instance or None, default=None
        Permutations.
    n_jobs : int, default=None
        Parallel tasks on threads; another joblib backend (``joblib.parallel_config``) gets
        them through joblib.
    {{memory}}
    {{verbose}}
    {{estimator}}

    Attributes
    ----------
    shapley_values_ : ndarray of shape (`n_features_in_`,)
        Exact Shapley values of the MMD^2 estimate.
    scores_ : ndarray of shape (`n_features_in_`,)
        Same as ``shapley_values_``.
    shares_ : ndarray of shape (`n_features_in_`,)
        ``shapley_values_ / abs(shapley_values_).sum()``: each value as a share of all
        the credit given out, in [-1, 1], comparable across features, data sets and games
        (see :class:`HSICShapleySelector`); in the ANOVA game, whose values are
        nonnegative up to noise, the shares of ``mmd_``.
    mmd_ : float
        The attributed statistic with all features, ``shapley_values_.sum()``: MMD^2
        (summed over pairs of samples for more than two) with ``scales=[1]``, else its sum
        over ``scales_``, each divided by the standard deviation of the joint kernel. Under
        the observational value function the values add up to that minus ``v(empty)``, the
        MMD^2 of the cell means, which is what ``mmd_`` then holds.
    interaction_values_ : ndarray of shape (`n_features_in_`, `n_features_in_`)
        As in :class:`HSICShapleySelector` (only when ``interactions`` is set).
    {{estimate_}}
    {{n_repetitions_}}
    value_function_ : str
        The game attributed: ``value_function``, or what "auto" chose ("anova", with
        permutations "pairwise_anova").
    {{scales_}}
    {{ranking_}}
    {{n_permutations_}}
    pvalue_ : float
        Permutation p-value of the two-sample test (only with ``n_permutations > 0``): the
        MMD^2 at every scale and the largest per-feature statistic, combined by weighted
        min-p as in :class:`HSICShapleySelector`.
    pvalues_, adjusted_pvalues_ : ndarray of shape (`n_features_in_`,)
        Raw and corrected per-feature permutation p-values, as in
        :class:`HSICShapleySelector` (only with ``n_permutations > 0``).
    statistics_ : ndarray of shape (n_permutations + 1, n_scales)
        Each scale's MMD^2 over the off-diagonal pairs, for the observed labels (row 0) and
        each permutation, as HSIC in :class:`HSICShapleySelector` (only with
        ``n_permutations > 0``).
    null_distribution_ : ndarray of shape (n_permutations, `n_features_in_`)
        The Shapley values under each permutation of the sample labels (only with
        ``n_permutations > 0``); their row sums are the MMD^2 null distribution.
    classes_ : ndarray
        The sample labels.
    bandwidths_, gammas_, kernels_ : as in :class:`HSICShapleySelector`
    knockoff_statistics_, knockoff_thresholds_, e_values_, knockoff_groups_, \
            selected_groups_, knockoff_value_functions_, knockoff_shrinkage_
        With ``fdr`` only: as in :class:`HSICShapleySelector`.
    {{n_features_in_}}
    feature_names_in_ : ndarray of shape (`n_features_in_`,)

    See Also
    --------
    mmd_shapley_values : The values from Gram matrices.
    attribute_shift : Attribute the difference between two arrays.
    HSICShapleySelector : The same for dependence on a target.

    Notes
    -----
    With more than two labels the statistic is the sum of MMD^2 over all pairs of samples,
    which is zero exactly when all samples have the same distribution (under a
    characteristic kernel).

    Examples
    --------
    >>> import numpy as np
    >>> from pkex_select import MMDShapleyAttributor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 5))
    >>> X[100:, 3] *= 2.0                     # the second sample has a wider feature 3
    >>> y = np.repeat([0, 1], 100)
    >>> attributor = MMDShapleyAttributor(1, n_permutations=199, random_state=0).fit(X, y)
    >>> attributor.get_support(indices=True)
    array([3])
    >>> bool(attributor.pvalues_[3] < 0.01)
    True
    """

    _ranked_game = _interaction_game = _knockoff_game = "anova"  # benchmarks.selection.shift
    _positive_only = True
    _parameter_constraints = {
        **PARAMETER_CONSTRAINTS,
        **ShapleySelectorBase._parameter_constraints,
        "estimate": [StrOptions({"auto", *ESTIMATORS})],
        "estimator": [StrOptions({"auto", *ESTIMATORS, RENAMED})],
    }

    def __init__(
        self,
        n_features_to_select=0.2,
        *,
        threshold=None,
        estimate="auto",
        kernel="rbf",
        bandwidth="auto",
        scales="auto",
        categorical_features="from_dtype",
        block_size=20,
        n_repetitions="auto",
        n_permutations=None,
        correction="maxT",
        alpha=None,
        fdr=None,
        knockoff_groups="auto",
        n_knockoffs=1,
        value_function="auto",
        anova_weight="auto",
        interactions=None,
        random_state=None,
        n_jobs=None,
        memory=None,
        verbose=0,
        estimator=RENAMED,
    ):
        self.n_features_to_select = n_features_to_select
        self.threshold = threshold
        self.estimate = estimate
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.scales = scales
        self.categorical_features = categorical_features
        self.block_size = block_size
        self.n_repetitions = n_repetitions
        self.n_permutations = n_permutations
        self.correction = correction
        self.alpha = alpha
        self.fdr = fdr
        self.knockoff_groups = knockoff_groups
        self.n_knockoffs = n_knockoffs
        self.value_function = value_function
        self.anova_weight = anova_weight
        self.interactions = interactions
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.memory = memory
        self.verbose = verbose
        self.estimator = estimator

    def _target(self, y, y_given):
        return MMD.target(y)

    def _target_gram(self, target, rows):
        codes = target.codes[rows]
        return np.equal.outer(codes, codes).astype(np.float64)

    def _ridge_targets(self, target, rows):
        return ridge_targets(target.codes[rows, None], ["delta"])

    def _target_rows(self, target, rows):
        return target._replace(codes=target.codes[rows])

    def _store_statistic(self, attribution, target):
        self.mmd_ = attribution.statistic
        self.classes_ = target.classes

    def _statistic(self, estimate=None):
        return MMD(estimate or self.estimate_, self.block_size, self.n_repetitions_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.one_d_labels = True
        return tags


def attribute_shift(X_p: ArrayLike, X_q: ArrayLike, **params) -> MMDShapleyAttributor:
    """Fit an :class:`MMDShapleyAttributor` to the difference between two samples.

    Parameters
    ----------
    X_p, X_q : array-like of shape (n_p, n_features) and (n_q, n_features)
        The two samples (for example reference and current data); data frames keep their
        column names, which must agree.
    **params
        Parameters of :class:`MMDShapleyAttributor`.

    Returns
    -------
    MMDShapleyAttributor
        Fitted on the rows of ``X_p`` (label "p") followed by those of ``X_q`` (label "q").

    Examples
    --------
    >>> import numpy as np
    >>> from pkex_select import attribute_shift
    >>> rng = np.random.default_rng(1)
    >>> reference = rng.normal(size=(150, 4))
    >>> current = rng.normal(size=(150, 4)) + [0, 0, 0.8, 0]
    >>> attribute_shift(reference, current, n_features_to_select=1).get_support(indices=True)
    array([2])
    """
    X_p, X_q = from_arrow(X_p), from_arrow(X_q)
    for name, sample in (("first", X_p), ("second", X_q)):
        if scipy.sparse.issparse(sample):
            raise TypeError(
                f"The {name} sample is a sparse matrix, but dense data is required (a product "
                "kernel compares every value, zeros included). Use '.toarray()' to convert it."
            )
        if len(sample) == 0:
            raise ValueError(f"The {name} sample has no rows; MMD compares two samples.")
    columns_p, columns_q = getattr(X_p, "columns", None), getattr(X_q, "columns", None)
    if (columns_p is None) != (columns_q is None) or (
        columns_p is not None and list(columns_p) != list(columns_q)
    ):
        raise ValueError("X_p and X_q must have the same columns in the same order.")
    if columns_p is not None:
        # Pooled, a column of numbers in one sample and text in the other would become text
        # and be compared as categories: every number a label of its own.
        mixed = [
            str(name)
            for name, dtype_p, dtype_q in zip(columns_p, list(X_p.dtypes), list(X_q.dtypes))
            if holds_numbers(dtype_p) != holds_numbers(dtype_q)
        ]
        if mixed:
            raise ValueError(
                f"Columns {', '.join(map(repr, mixed))} hold numbers in one sample and text "
                "in the other; give them one type in both (pandas.to_numeric for numbers "
                "written as text, astype(str) for labels) before comparing."
            )
    if columns_p is not None and hasattr(X_p, "vstack") != hasattr(X_q, "vstack"):
        # One pandas frame, one polars frame: both as pandas, which keeps every dtype.
        X_p, X_q = (x.to_pandas() if hasattr(x, "vstack") else x for x in (X_p, X_q))
    if columns_p is not None and hasattr(X_p, "vstack"):  # polars
        X = X_p.vstack(X_q)
    elif columns_p is not None:
        import pandas as pd

        X = pd.concat([X_p, X_q], ignore_index=True)
    else:
        X_p, X_q = np.asarray(X_p), np.asarray(X_q)
        if X_p.ndim != 2 or X_q.ndim != 2 or X_p.shape[1] != X_q.shape[1]:
            raise ValueError(
                f"X_p and X_q must be 2-D with the same number of columns; got {X_p.shape} "
                f"and {X_q.shape}."
            )
        X = np.concatenate([X_p, X_q])
    y = np.repeat(["p", "q"], [len(X_p), len(X_q)])
    return MMDShapleyAttributor(**params).fit(X, y)
