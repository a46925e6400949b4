"""Exact Shapley values of HSIC, and feature selection by them."""

from __future__ import annotations

from numbers import Real

import numpy as np
from numpy.typing import ArrayLike

from . import _pairgame
from ._docstrings import shared_docstring
from ._gram import TargetGram, check_gram_matrices
from ._ridge_game import ridge_targets
from ._selection import ShapleySelectorBase
from ._sklearn_compat import Interval, StrOptions, validate_params
from ._statistics import HSIC, PARAMETER_CONSTRAINTS
from ._validation import RENAMED, categorical_dtypes, renamed_estimate
from .kernels import BANDWIDTH_RULES

__all__ = ["HSICShapleySelector", "hsic_shapley_values"]

ESTIMATORS = ("biased", "unbiased", "block")


@validate_params(
    {
        "K": ["array-like"],
        "L": ["array-like"],
        "estimate": [StrOptions(set(ESTIMATORS))],
        "estimator": [StrOptions({*ESTIMATORS, RENAMED})],
        **PARAMETER_CONSTRAINTS,
        **_pairgame.ATTRIBUTION_CONSTRAINTS,
    },
    prefer_skip_nested_validation=True,
)
@shared_docstring
def hsic_shapley_values(
    K: ArrayLike,
    L: ArrayLike,
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
    """Exact Shapley values of HSIC with the product kernel of the per-feature Gram matrices.

    The game is ``v(S) = HSIC(prod_{j in S} K[j], L)``; removing a feature sets its Gram
    matrix to all ones. The values add up to the HSIC estimate with all features. With
    ``value_function="observational"`` a removed ``K[j]`` is replaced by its mean c_j
    instead, ``v(S) = prod_{j not in S} c_j HSIC(prod_{j in S} K[j], L)``, as in the
    published authors' current code. :class:`HSICShapleySelector` is this function on the
    Gram matrices of standardised data, with the same options; the defaults differ (the
    estimator chooses the game by its question: ``value_function_``, the estimate by the
    data's size: ``estimate_``).

    Parameters
    ----------
    K : array-like of shape (n_features, n_samples, n_samples) or (n_scales, n_features, \
            n_samples, n_samples)
        Symmetric per-feature Gram matrices with unit diagonal; with a leading axis, one
        stack per bandwidth scale, whose games are added up as the selector's ``scales`` are
        (each divided by the standard deviation of its joint kernel over the pairs).
    L : array-like of shape (n_samples, n_samples)
        Symmetric Gram matrix of the target.
    estimate : {"biased", "unbiased", "block"}, default="biased"
        "biased": tr(K H L H) / (n - 1)^2 with H the centring matrix. "unbiased": the
        U-statistic of Song et al. (2012), n >= 4. "block": the mean of the unbiased estimate
        over blocks of ``block_size`` >= 4 samples, ``n_repetitions`` random partitions (as
        block HSIC Lasso, Yamada et al. 2018, which averages the biased one), O(n B d^2)
        time.
    block_size, n_repetitions : int, default=20, 10
        Block estimator only: ``n_repetitions`` partitions of the samples into blocks of
        ``block_size``; more partitions bring the block estimate closer to the exact one
        (see the guide's benchmarks page).
    value_function : {"baseline", "observational", "anova", "pairwise_anova"}, \
            default="baseline"
        A removed feature's Gram matrix becomes all ones, or its mean over the entries the
        estimator uses (all n^2, or the blocks' for "block"); or, for "anova", each ``K[j]``
        is U-centred (over each block for "block"), the factors are ``1 + K~[j]``, a removed
        one becomes all ones, and only pairs of distinct samples count; "pairwise_anova"
        keeps that game's interactions of at most two features, the game of
        :class:`HSICShapleySelector`'s tests (see its ``value_function``).
    anova_weight : "auto" or float in (0, 1], default="auto"
        The two ANOVA games only: the factors are ``1 + w K~[j]``, w = 1 up to 6
        features and 6 / d beyond for "auto" (see :class:`HSICShapleySelector`).
    scales : array-like of float, default=None
        The bandwidth scale of each stack of ``K`` (only their order matters: the overall
        test gives the widest its own share); by default 1, 2, ... (widest last).
    n_permutations : int, default=0
        When positive, the permutation tests of :class:`HSICShapleySelector`, in the
        result's ``tests`` (set ``return_result=True``).
    {{correction}}
    {{result_interactions}}
    {{random_state}}
    {{n_jobs}}
    {{verbose}}
    return_result : bool, default=False
        Return the whole :class:`~pkex_select.Attribution` (values, statistic, interactions,
        tests) rather than the values alone.

    {{estimator}}
    Returns
    -------
    values : ndarray of shape (n_features,), or Attribution when ``return_result`` is True

    References
    ----------
    Gretton et al. (2005), "Measuring statistical dependence with Hilbert-Schmidt norms".
    Song et al. (2012), "Feature selection via dependence maximization", JMLR 13.
    Yamada et al. (2018), "Ultra high-dimensional nonlinear feature selection for big
    biological data", IEEE TKDE.

    Examples
    --------
    >>> import numpy as np
    >>> from pkex_select import hsic_shapley_values
    >>> from pkex_select.kernels import gram_matrices
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(100, 3))
    >>> y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=100)
    >>> K = gram_matrices(X, "rbf", gamma=0.5)
    >>> L = gram_matrices(y[:, None], "rbf", gamma=0.5)[0]
    >>> values = hsic_shapley_values(K, L)
    >>> int(np.argmax(values))
    0
    >>> result = hsic_shapley_values(K, L, n_permutations=99, random_state=0,
    ...                              return_result=True)
    >>> bool(result.tests.pvalues[0] < 0.05)
    True
    """
    K, L = check_gram_matrices(K, L)
    return _pairgame.gram_attribution(
        HSIC(renamed_estimate(estimate, estimator, stacklevel=4), block_size, n_repetitions),
        K,
        TargetGram(L),
        scales=scales,
        return_result=return_result,
        verbose=verbose,
        name="hsic_shapley_values",
        n_permutations=n_permutations,
        correction=correction,
        random_state=random_state,
        n_jobs=n_jobs,
        value_function=value_function,
        anova_weight=anova_weight,
        interactions=interactions,
    )


@shared_docstring
class HSICShapleySelector(ShapleySelectorBase):
    """Select features by their exact Shapley share of HSIC(X, y).

    HSIC with a product kernel over features measures the dependence between X and y; its
    exact Shapley values split it among the features, counting main effects and
    interactions (a feature that matters only together with another still gets its share).
    To choose k features for a model it explains a kernel model fitted to y instead (see
    ``value_function``).

    Parameters
    ----------
    {{n_features_to_select}}
    {{threshold}}
    estimate : {"auto", "biased", "unbiased", "block"}, default="auto"
        The HSIC estimate that is attributed (see :func:`hsic_shapley_values`). "biased" and
        "unbiased" use all n (n - 1) / 2 pairs, streamed with bounded memory; "block" uses
        ``n_repetitions`` partitions into blocks of ``block_size`` samples, for very large n.
        "auto": "biased" up to 4 x 10^7 multiply-adds of pairs times features (n = 2000
        at d = 20, about a second), "block" beyond it (with ``n_repetitions="auto"``, as
        many pairs, so the cost does not drop there); the choice is in ``estimate_``. At
        the switch the two agree closely (the scaling guide has the measurements).
    {{kernel}}
    bandwidth : {"auto", "median", "alignment", "scott", "silverman", "std"} or float, \
            default="auto"
        Bandwidth rule for the numeric features, applied after standardising each of them to
        zero mean and unit variance (so rankings do not follow the features' units). The
        median heuristic takes the median distance between samples, per feature.
        "alignment" chooses the bandwidths together, with y: those that maximise the
        centred alignment of the product kernel with the target's kernel on up to 600 rows,
        less a small penalty on the joint kernel's narrowness; a feature y does not depend
        on is widened until it barely counts. "auto": "alignment" for the model game (its
        kernel ridge needs the widths a model would choose), the median heuristic
        otherwise. Permutation tests need bandwidths chosen without y:
        ``bandwidth="alignment"`` with ``alpha`` or ``n_permutations`` is an error. Knockoffs
        may use y (the bandwidths are aligned on [X, X~], a column and its knockoff alike).
    scales : "auto" or list of float, default="auto"
        Bandwidth scales: the statistic is attributed with the numeric bandwidths times
        each scale, and the games are added up, each divided by the standard deviation of
        its joint kernel over the pairs so that no scale dominates. "auto" is ``(1,)``
        where ``value_function="auto"`` ranks without tests (the model game fits one
        kernel; the paper's game selected no better with a second scale, at twice the cost)
        and ``(1, sqrt(n_numeric_features))`` otherwise: scale 1 resolves what
        each feature does on its own scale, while the product of d such factors is a
        kernel far narrower than the data; scale sqrt(d) gives a joint kernel about as
        wide as the joint median heuristic, which keeps the overall test as powerful as
        the standard kernel tests. ``scales=[1]`` attributes the single-scale statistic
        of the functions on Gram matrices.
    {{categorical_features}}
    target_kernel : {"auto", "delta", "rbf", "laplacian", "cauchy"}, default="auto"
        "auto": delta for class labels, RBF for continuous targets. Text, booleans and
        categorical data are class labels; numbers with a fractional part are continuous.
        Integer-valued numbers are class labels when they take at most two values, or at
        most 20 values with at least two samples per value on average, and continuous
        otherwise (months, counts and scores with many values). With 11 to 40 distinct
        integer values the guess is borderline, and a warning says which one was taken.
    target_bandwidth : {"median", "scott", "silverman", "std"} or float, default="median"
        Bandwidth of a continuous target, after standardising it.
    {{block_size}}
    n_repetitions : int or "auto", default="auto"
        Block estimator only: partitions of the samples into blocks of ``block_size``.
        "auto": as many as draw about 4 x 10^7 / d pairs (the exact estimate's pairs where
        ``estimate="auto"`` leaves it; 2 x 10^6 at d = 20), at least 10, so the cost does
        not drop where the estimate changes; with the model games, whose pairs give only
        ``hsic_``, at least 1 (one partition from about 2 x 10^5 samples on at d = 20);
        with permutation tests 10, as each permutation re-weights every pair drawn.
        ``n_repetitions_`` holds the count used; the scaling guide measures how closely the
        estimate follows the exact one.
    n_permutations : int, default=None
        When positive, per-feature permutation p-values ``pvalues_`` and the p-value of the
        HSIC independence test ``pvalue_``. Each permutation of y re-weights the same pairs:
        one matrix-vector product per chunk of pairs, no new Shapley computation. None: 0
        without ``alpha``; with ``alpha``, 999, or more where Holm or Benjamini-Hochberg
        need them to reach ``alpha`` (``n_permutations_`` holds the count used).
    correction : {"maxT", "holm", "fdr_bh"}, default="maxT"
        How ``adjusted_pvalues_`` correct the per-feature p-values for testing every
        feature. "maxT": the Westfall-Young step-down procedure on the values studentised
        by their permutation null; it controls the family-wise error under any dependence
        between features, using the joint null that every permutation already gives, and is
        more powerful than Holm. "holm": Holm's step-down (family-wise error). "fdr_bh":
        Benjamini-Hochberg (false discovery rate), by
        :func:`scipy.stats.false_discovery_control`.
    alpha : float in (0, 1), default=None
        When given, keep exactly the features whose adjusted p-value is at most ``alpha``,
        as :class:`~sklearn.feature_selection.SelectFwe` and
        :class:`~sklearn.feature_selection.SelectFdr` do; ``n_features_to_select`` is then
        ignored. Possibly no feature is kept. The maxT correction compares each feature with
        the far tail of the permuted maxima, so more permutations keep more (the tests
        guide has the measurements). Holm and Benjamini-Hochberg multiply the smallest
        p-value, 1 / (1 + n_permutations), by the number of features: a count too small to
        reach ``alpha`` gets a warning.
    fdr : float in (0, 1), default=None
        When given, select by model-X knockoffs at this false discovery rate
        (:mod:`pkex_select.knockoffs`): Gaussian knockoff copies of the features are drawn,
        the game's exact Shapley values are computed on the 2d columns [X, X~] (or, with
        ``value_function="auto"`` on a linear response, the lasso's coefficients: see
        there), and a feature is kept when its value exceeds its knockoff's by more than the
        knockoff+ threshold. The question differs from ``alpha``'s: ``alpha`` keeps the
        features y is related to (a marginal test, a near-copy of a relevant feature is kept
        too) with the family-wise error controlled; ``fdr`` keeps those that tell about y
        what the others do not (conditional), with the expected share of false selections at
        most ``fdr``. It assumes the features are about jointly Gaussian after
        standardisation (second-order knockoffs) and needs numeric features. Knockoff+ can
        select only when at least 1 / ``fdr`` features pass (10 at 0.1): with few relevant
        features use 0.2 (a warning says so). ``n_features_to_select`` is then ignored.
    knockoff_groups : array-like of shape (n_features,), "auto" or None, default="auto"
        Features tested together as one hypothesis (group knockoffs; their statistics are
        added up and the group is kept or dropped as a whole). "auto": features whose
        correlation is at least 0.9 (average linkage), so that a near-copy of a feature does
        not split the credit and hide both; None: every feature alone; or a label per
        feature.
    n_knockoffs : int, default=1
        Knockoff draws. One: the knockoff+ filter. More: the draws' e-values
        ``d 1{W >= T} / (1 + #{W <= -T})`` at the knockoff+ threshold T of level
        ``fdr / 2`` are averaged and selected by e-BH at ``fdr`` (derandomised knockoffs,
        Ren and Barber 2023): the selection no longer hinges on one draw and the false
        discovery rate stays controlled, but it selects only when about 2 / ``fdr``
        features pass, so with few relevant features it loses most of its power (the
        selection guide has the measurements).
    value_function : {"auto", "model", "model+anova", "baseline", "anova", "pairwise_anova", \
            "observational"}, default="auto"
        The game whose Shapley values are computed (see the user guide, "Reading the
        values"). "auto": each question gets the game that answers it best, and
        ``value_function_`` records the one used.

        - Selecting k features (``n_features_to_select``, ``threshold``) uses "model+anova"
          up to 100 features, and up to 200 where the model's rows hold the whole sample (n
          at most 353 at d = 200). In the model game, a kernel ridge regression of y on
          every feature, at bandwidths aligned with y, is explained row by row, and a
          feature's value is its mean absolute Shapley value (its observational value in
          each row's game): how far it moves the fitted function, in units of the
          standardised target (summed over the classes' indicators for labels). A feature
          the model does not use gets about 0 and no value is negative; the ANOVA game's
          shares, added at weight 0.3, then rank a feature y depends on (an even effect, a
          redundant copy) above those it does not, while the features the model uses keep
          their order. A feature the alignment set aside (an even effect such as ``|x|`` or
          ``cos 2x`` beside others) enters the ridge as a term of its own, 0.3 times its
          factor at the median-heuristic bandwidth added to the product kernel, where the
          ridge then predicts better by more than 2% (five candidates, chosen by the ANOVA
          game; every one, for 10%, in "model"); in "model+anova" the two numeric features
          the ridge's residuals depend on most may then enter at a half, a quarter or an
          eighth of that bandwidth, for 10%, or there take the place of a term at it (an
          effect finer than it, such as ``sin 6x``), and the pair of set-aside features the
          residuals depend on most jointly go back into the product kernel at the
          median-heuristic bandwidths, for 10% (a pure interaction such as ``x_i x_j``). A
          categorical column's factor on pairs whose labels differ is aligned too, and a
          column the ridge predicts as well without gets 0 (an identifier does not take the
          credit). The model is fitted on up to 1000 rows, at the penalty of least
          leave-one-out error on 400 of them, and a feature's value averaged over 500 of
          them, evenly spaced; ``hsic_`` is still the HSIC of all of them. Its leave-one-out
          fit needs at least 4 rows.
        - Otherwise "anova": each feature's kernel factor is U-centred over the
          sample (``1 + K~_j``), a removed feature's factor is 1, and only pairs of
          distinct samples count; a feature y does not depend on gets a value near 0 and
          one it depends on a positive share, even beside a dominant feature.
        - With permutation tests (``alpha``, ``n_permutations``), "pairwise_anova": the
          ANOVA game's interactions of at most two features (a feature's value is its own
          centred term plus half of each of its pairwise terms, computed in O(d) per
          pair). Two features y does not depend on that copy each other have centred
          factors whose product is positive on average, so in the full game every term
          that holds both and a relevant feature carries that feature's dependence on y
          into their values, and permuting y removes it: with a column and its copy
          beside two relevant ones (n = 1500, d = 6), "anova" kept the pair on every data
          set at alpha = 0.05. Without such terms the values of features y does not depend
          on have the same mean observed and permuted. A pure interaction of three
          features gets no value in it.
        - Knockoffs (``fdr``) use "model", on the 2d columns [X, X~] (without the terms of
          set-aside features: not measured there; the product restore they replaced
          changed no selection on 120 data sets and doubled the cost), up to
          50 features (the ANOVA game beyond). Where a lasso on the same columns explains
          at least 90% of the variance that the model's kernel ridge explains (a linear
          response), the statistic is the lasso's ``|b_j| - |b_j~|`` instead, which has
          the most power there; ``knockoff_value_functions_`` records which per draw.
          Both fits treat a feature and its knockoff alike, so the choice survives any
          swap and the false discovery rate stays controlled.
        - With ``interactions``, "baseline": the published PKeX-Shapley game, where a
          removed feature's factor is 1. Adding a feature narrows the joint kernel, so one
          that adds little beyond the others gets a small or negative value.

        "model+anova": each feature's share of the model game's values plus 0.3 times its
        share of the ANOVA game's (median-heuristic bandwidths, one scale, on the model's
        rows), scaled to add up to 1. A feature whose ANOVA value is at the noise level
        keeps a tenth of its model share unless the ridge predicts worse without it or the
        ANOVA game's term of it and another feature stands out. When ranking, a numeric
        feature whose squared correlation r^2 with another is at least 0.5 then gets at
        least r^2 times that one's value, but not more than r^2 times the value of a feature
        above it whose ANOVA value is 4 noise levels or more (from the largest share down):
        a near-copy the ridge leaves out ranks above the noise, not above the evidence (the
        user guide, "Selecting features: three questions, three rules"). "model": the model
        game's values alone, which can leave a redundant copy the ridge leaves out at about
        0, below features y does not depend on.

        "observational": a removed feature's Gram matrix becomes its mean over the entries
        the estimator uses, as in the published authors' current code. The selection
        guide has the measurements behind these choices.
    anova_weight : "auto" or float in (0, 1], default="auto"
        The weight w of the ANOVA game's factors ``1 + w K~_j``; an interaction of q
        features carries w^q. "auto": 1 up to 6 features, 6 / d beyond. A smaller w
        favours main effects, a larger one interactions (a pure interaction such as XOR
        among 20 features is found far more often with w = 1, single main effects less
        often: the tests guide has the measurements). Used by the two ANOVA games only.
    {{interactions}}
    {{random_state}}
    n_jobs : int, default=None
        Parallel tasks on threads (the kernels release the GIL);
        ``joblib.parallel_config(backend="dask")`` runs them on a Dask cluster.
    {{memory}}
    {{verbose}}
    {{estimator}}

    Attributes
    ----------
    shapley_values_ : ndarray of shape (`n_features_in_`,)
        Exact Shapley values of the HSIC estimate; in the model game, each feature's mean
        absolute Shapley value in the fitted kernel ridge (see ``value_function``).
    scores_ : ndarray of shape (`n_features_in_`,)
        Same as ``shapley_values_`` (the name scikit-learn's selectors use).
    shares_ : ndarray of shape (`n_features_in_`,)
        ``shapley_values_ / abs(shapley_values_).sum()``: each value as a share of all
        the credit given out, in [-1, 1] whatever the kernels' normalisation, so a reader
        can compare them across features, data sets and games. Their magnitudes add up
        to 1; where no value is negative (the ANOVA game, up to sampling noise) they are
        the shares of ``hsic_``. A negative share (the paper's game) says that adding the
        feature to the others lowers HSIC on average: what it adds about y is less than
        what it costs by narrowing the joint kernel, as for a feature that repeats one
        already counted or a weak one beside a dominant one. It is not evidence that y
        is independent of the feature: test that with ``alpha``.
    hsic_ : float
        The statistic with all features (``shapley_values_.sum()`` in the statistic's
        games): the HSIC estimate with ``scales=[1]``, else the sum over ``scales_`` of HSIC
        divided by the standard deviation of the joint kernel over the pairs. From the
        pairs ``estimate_`` and ``n_repetitions_`` say: beyond about 2000 samples at
        d = 20 the block estimate, from a bounded number of pairs.
    interaction_values_ : ndarray of shape (`n_features_in_`, `n_features_in_`)
        The index ``interactions`` (only when it is set): entry (i, j) is the pair's
        interaction, the diagonal the index's order-one values. Features that act only
        together (XOR) stand out here while their order-one values are small.
    {{estimate_}}
    {{n_repetitions_}}
    value_function_ : str
        The game attributed: ``value_function``, or what "auto" chose.
    {{scales_}}
    {{ranking_}}
    {{n_permutations_}}
    pvalues_ : ndarray of shape (`n_features_in_`,)
        Permutation p-values per feature (only with ``n_permutations > 0``): of the
        Shapley value with one scale; with several, of the larger of the feature's
        studentised values at each scale (each scale's values centred and scaled by their
        spread over all permutations), so that a difference seen at one scale is tested there.
    adjusted_pvalues_ : ndarray of shape (`n_features_in_`,)
        ``pvalues_`` corrected for multiplicity by ``correction`` (only with
        ``n_permutations > 0``). Constant features are left out of the family and get 1.
    pvalue_ : float
        Permutation p-value of the independence test (only with ``n_permutations > 0``).
        It combines, by weighted min-p on the same permutations (as in MMDAgg), the widest
        scale's HSIC (weight 1/2: its joint kernel is about as wide as the joint median
        heuristic, the standard test, which sees dependence spread over many features), the
        largest per-feature statistic (1/3: see ``pvalues_``; dependence carried by one or
        a few features) and the narrower scales' HSIC (1/6: dependence between a few
        features, such as XOR). The combination is calibrated by the same permutations, so
        the test is exact. With ``scales=[1]`` there is no narrower scale, and the HSIC
        tested is ``hsic_`` itself.
    statistics_ : ndarray of shape (n_permutations + 1, n_scales)
        Each scale's HSIC over the off-diagonal pairs (normalised as in the sum over scales),
        for the observed labels (row 0) and each permutation (only with
        ``n_permutations > 0``). It differs from the sum of the values by a constant that is
        the same in every permutation, and it is what the overall test compares: where the joint
        kernel is nearly the identity the sum of the values is that constant plus a signal
        below its rounding error.
    null_distribution_ : ndarray of shape (n_permutations, `n_features_in_`)
        The Shapley values under each permutation of y (only with ``n_permutations > 0``);
        their row sums are the HSIC null distribution. With one scale ``pvalues_[j]`` is
        ``(1 + #{values >= shapley_values_[j]}) / (1 + n_permutations)``, counting values
        within 100 ulps as ties (as :func:`scipy.stats.permutation_test` does).
    knockoff_statistics_ : ndarray of shape (n_knockoffs, n_groups)
        W per draw and group (only with ``fdr``): the sum over the group of the feature's
        Shapley value minus its knockoff's, in the game ``knockoff_value_functions_`` (or
        the lasso's coefficient difference). Swapping a feature with its knockoff negates
        its W, so a feature that tells nothing about y given the others has W of either
        sign with equal chance.
    knockoff_thresholds_ : ndarray of shape (n_knockoffs,)
        Each draw's knockoff+ threshold (inf where none qualifies).
    e_values_ : ndarray of shape (n_groups,)
        The groups' mean e-values over the draws; selected are those e-BH keeps.
    knockoff_groups_ : ndarray of shape (`n_features_in_`,)
        The group of each feature (-1 for a constant feature, never selected).
    selected_groups_ : ndarray of int
        The selected groups.
    knockoff_value_functions_ : ndarray of str of shape (n_knockoffs,)
        Each draw's statistic: the game ``value_function`` names, or for "auto" "model"
        (up to 100 columns [X, X~], "anova" beyond) or "lasso" (see ``value_function``).
    knockoff_shrinkage_ : bool
        Whether the correlation behind the knockoffs was shrunk (Ledoit-Wolf; with fewer
        than 2 samples per feature).
    bandwidths_ : ndarray of shape (`n_features_in_`,)
        Bandwidths used, in units of each feature's standard deviation.
    gammas_ : ndarray of shape (`n_features_in_`,)
        The corresponding kernel parameters on the standardised features.
    kernels_ : list of str
        The kernel factor of each feature.
    target_kernel_ : str
    target_bandwidth_ : ndarray of shape (n_outputs,)
        In units of the target's standard deviation (1 for the delta kernel).
    {{n_features_in_}}
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Defined only when X has feature names that are all strings.

    See Also
    --------
    hsic_shapley_values : The values from Gram matrices.
    MMDShapleyAttributor : The same for the two-sample statistic MMD.
    sklearn.feature_selection.SelectKBest : Univariate selection.

    Examples
    --------
    >>> import numpy as np
    >>> from pkex_select import HSICShapleySelector
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 8))
    >>> y = np.sign(X[:, 2] * X[:, 5])          # an interaction: no main effects
    >>> selector = HSICShapleySelector(n_features_to_select=2).fit(X, y)
    >>> selector.get_support(indices=True)
    array([2, 5])
    >>> selector.value_function_    # the kernel model's game, the ANOVA game's beside it
    'model+anova'
    >>> paper = HSICShapleySelector(value_function="baseline").fit(X, y)
    >>> bool(np.isclose(paper.shapley_values_.sum(), paper.hsic_))  # the statistic's game
    True
    """

    _parameter_constraints = {
        **PARAMETER_CONSTRAINTS,
        **ShapleySelectorBase._parameter_constraints,
        "estimate": [StrOptions({"auto", *ESTIMATORS})],
        "estimator": [StrOptions({"auto", *ESTIMATORS, RENAMED})],
        "target_kernel": [StrOptions({"auto", "delta", "rbf", "laplacian", "cauchy"})],
        "target_bandwidth": [
            StrOptions(set(BANDWIDTH_RULES)),
            Interval(Real, 0, None, closed="neither"),
        ],
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
        target_kernel="auto",
        target_bandwidth="median",
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
        self.target_kernel = target_kernel
        self.target_bandwidth = target_bandwidth
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
        return HSIC.target(
            y, self.target_kernel, self.target_bandwidth, categorical_dtypes(y_given)
        )

    def _target_gram(self, target, rows):
        return target.within(target.arguments(rows[None])[0])

    def _ridge_targets(self, target, rows):
        return ridge_targets(target.Y[rows], target.kernels)

    def _target_rows(self, target, rows):
        return target.take(rows)

    def _store_statistic(self, attribution, target):
        self.hsic_ = attribution.statistic
        self.target_kernel_ = target.kernels[0]
        self.target_bandwidth_ = target.bandwidths

    def _statistic(self, estimate=None):
        return HSIC(estimate or self.estimate_, self.block_size, self.n_repetitions_)
