"""Shared base of the Shapley-value feature selectors (HSIC and MMD).

The two public estimators differ only in how the pair weights are built from y; everything
else (validation, standardisation, bandwidths, the call to the engine and the tests, the
fitted attributes, tags) lives here once. Which question the parameters ask, and the
selection that answers it (the knockoff draws too), is in _questions.py.
"""

import math
import warnings
from dataclasses import replace
from functools import cache, partial
from numbers import Integral, Real

import joblib
import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.validation import check_is_fitted, check_memory, validate_data

from . import _pairgame
from ._bandwidth_alignment import aligned_bandwidths, alignment_rows
from ._features import (
    DataFactors,
    JointFactors,
    non_numeric_message,
    prepare_features,
    resolve_scales,
    with_bandwidths,
)
from ._interactions import INDICES
from ._pair_evidence import pair_scores
from ._plan import subsample_rows
from ._pvalues import CORRECTIONS
from ._questions import question_of
from ._ridge_game import (
    MIN_MODEL_SAMPLES,
    MODEL_GAMES,
    additive_features,
    check_penalty,
    check_rows,
    drop_one_gains,
    drop_rows,
    dropped_categories,
    model_factors,
    model_rows,
    model_values,
    set_aside_fits,
)
from ._scheduling import beside, one_blas_thread, progress_printer
from ._sklearn_compat import HasMethods, Interval, StrOptions, get_output_config
from ._spelling import spelled
from ._statistics import VALUE_FUNCTIONS
from ._validation import (
    check_no_missing,
    dates_as_days,
    from_arrow,
    holds_numbers,
    renamed_estimate,
)
from .kernels import BANDWIDTH_RULES

__all__ = [
    "resolve_estimate",
    "resolve_repetitions",
    "resolve_selection_scales",
    "ShapleySelectorBase",
]


def _non_numeric_columns(X):
    """The mask of a data frame's columns that do not hold numbers, or None if all do (or X
    is an array, whose single dtype says nothing per column)."""
    if not hasattr(X, "columns"):
        return None
    mask = np.array([not holds_numbers(dtype) for dtype in X.dtypes], dtype=bool)
    return mask if mask.any() else None


# estimate="auto" attributes the exact (biased) estimate up to this many multiply-adds of
# pairs times features (about 1 s at n = 2000, d = 20 on one core), and beyond it the block
# estimate with n_repetitions="auto" partitions: as many as draw about the same number of
# pairs (at least _MIN_REPETITIONS), so the cost does not drop where the estimate changes
# and stays flat until the minimum takes over (python -m benchmarks.scale.monotone; python
# -m benchmarks.scale.agreement measured how well the two agree).
_EXACT_WORK = 4e7
_MIN_REPETITIONS = 10


def _pairs_per_partition(n_samples, block_size):
    """The pairs one partition into blocks of ``block_size`` draws (the remainder left out)."""
    return (n_samples // block_size) * block_size * (block_size - 1) / 2


def resolve_repetitions(
    n_repetitions, n_samples, n_features, block_size, tested=False, statistic_only=False
):
    """The partitions that ``n_repetitions="auto"`` stands for; an int unchanged.

    Enough to draw ``_EXACT_WORK / n_features`` pairs, at least ``_MIN_REPETITIONS`` and no
    more than draw every pair about once. With permutation tests ``_MIN_REPETITIONS``: each
    permutation re-weights every pair drawn, whatever the number of features. Where the
    pairs give only the statistic (``statistic_only``: the model games take their values
    from a model), at least one: the minimum bounds the variance of Shapley values, and
    beyond 2 x 10^4 samples it would draw pairs the statistic does not need.
    """
    if not isinstance(n_repetitions, str):
        return n_repetitions
    if tested:
        return _MIN_REPETITIONS
    fewest = 1 if statistic_only else _MIN_REPETITIONS
    per_repetition = _pairs_per_partition(n_samples, block_size)
    if per_repetition == 0:
        return fewest
    budget = _EXACT_WORK / max(n_features, 1) / per_repetition
    every_pair = n_samples * (n_samples - 1) / 2 / per_repetition
    return max(fewest, math.ceil(min(budget, every_pair)))


def resolve_estimate(estimate, n_samples, n_features, block_size, n_repetitions):
    """The estimate that ``estimate="auto"`` stands for at this size; others unchanged."""
    if estimate != "auto":
        return estimate
    if n_samples < block_size:
        return "biased"
    exact_pairs = n_samples * (n_samples - 1) / 2
    if exact_pairs * n_features <= _EXACT_WORK:
        return "biased"
    # Blocks holding a quarter of all pairs or more would save little (with "auto", even
    # the fewest partitions; past the switch it draws more, to keep the cost).
    fewest = _MIN_REPETITIONS if isinstance(n_repetitions, str) else n_repetitions
    block_pairs = fewest * _pairs_per_partition(n_samples, block_size)
    return "biased" if block_pairs * 4 > exact_pairs else "block"


def resolve_selection_scales(scales, value_function, resolved):
    """The bandwidth scales of the game ``resolved``: "auto" is one scale for the model
    games (a kernel ridge fits one kernel; a given scale multiplies its bandwidths, and
    several are refused) and for the paper's game where ``value_function="auto"`` chose it
    (it selected as well with one scale as with two on real data, at half the cost).
    Elsewhere ``scales`` is passed on ("auto" is then (1, sqrt(d)), which the overall test
    needs)."""
    if resolved in MODEL_GAMES:
        if isinstance(scales, str):
            return (1.0,)
        scales = resolve_scales(scales, 1)  # checks the values first
        if len(scales) != 1:
            raise ValueError(
                f"value_function={resolved!r} fits one kernel ridge, at one bandwidth per "
                f"feature; scales={list(scales)!r} asks for {len(scales)}. Give one scale (it "
                "multiplies the aligned bandwidths), for example scales=[2], or leave "
                "scales='auto'."
            )
        return scales
    if isinstance(scales, str) and value_function == "auto" and resolved == "baseline":
        return (1.0,)
    return scales


def resolve_bandwidth_rule(bandwidth, value_function):
    """The rule ``bandwidth="auto"`` stands for: bandwidths aligned with y for the model
    game (its kernel ridge needs the widths a model would choose: at the median heuristic's
    it ranked last but two of 13 methods in ``python -m benchmarks.selection``), the median
    heuristic elsewhere (the tests and knockoffs need bandwidths chosen without y)."""
    if bandwidth != "auto":
        return bandwidth
    return "alignment" if value_function in MODEL_GAMES else "median"


# "model+anova": the weight of the ANOVA game's shares beside the model game's. The smallest
# of 0.02, 0.05, 0.1, 0.2, 0.3, 0.5 and 1 that ranks every relevant copy above every noise
# column on the redundant design of python -m benchmarks.selection.planted at n = 200, 500
# and 2000; of those that do, the best summed mean rank over both k fractions on the
# selection study's tuning half.
ANOVA_SHARE = 0.3
# "model+anova": a feature whose ANOVA value is below _UNBACKED_LEVELS noise levels (the
# largest magnitude of a negative ANOVA value) and without which the ridge's leave-one-out
# error rises by less than _NEEDED_GAIN keeps _UNBACKED_SHARE of its model share. Chosen on
# python -m benchmarks.selection.planted at n = 200 (levels 2, 3 and 4, gains 0.05, 0.08 and
# 0.1, shares 0, 0.03, 0.1 and 0.3; benchmarks/selection/results/rules.md). A share of 0
# would leave an even effect the ANOVA game misses and the ridge does not need at exactly 0.
_UNBACKED_LEVELS = 3.0
_NEEDED_GAIN = 0.08
_UNBACKED_SHARE = 0.1
# "model+anova", ranking: a numeric feature whose squared correlation r^2 with another on
# the model game's rows reaches _COPY_R2 is a near-copy of it and gets at least r^2 times its
# value. The ridge uses one copy of a block and leaves the others at about their ANOVA share,
# below a noise column it spends some of its fit on (planted blocks design at n = 200: 2 of
# 20 data sets). A copy is not lifted past a feature the ANOVA game backs at _EVIDENT_LEVELS
# noise levels or more (it gets at most r^2 times that feature's value), so it rises past
# noise and not past evidence: lifted past every feature, copies took relevant features'
# places on credit and crabs and cost the selection study 0.8 mean rank
# (benchmarks/selection/results/rules.md). Levels 3, 3.5, 4, 5 and 8 tried: 3 left a copy of
# the blocks design below a noise column of 3.4 levels; 4 is the smallest with a margin; the
# study's scores are the same at 4 and 8.
_COPY_R2 = 0.5
_EVIDENT_LEVELS = 4.0
# The correlations held at once (2^22: 32 MB), so that wide data (the model game's rows
# shrink with the columns) does not need a columns x columns matrix.
_COPY_ENTRIES = 2**22
# The unbacked features of largest model value checked (an eigendecomposition each): the
# fewest of 3, 5, 8, 12 and 16 that left the planted designs at n = 200 and 500 as with every
# one checked (chosen when only those checked were cut; cutting the rest too left those
# designs the same to the digit).
_UNBACKED_TRIES = 12
# A checked feature whose standardised pair dividend with another (_pair_evidence.py)
# reaches _PAIR_SCORE is backed: of about 5000 pairs with a feature y does not depend on the
# largest scored 7.2 on the planted designs, a planted pure interaction 6-30 at n = 200 and
# 13-37 at 500. Scores of 6, 8 and 10 gave the planted designs the same recall but the even
# design at n = 200 (0.930 at 6, 0.940 at 8 and 10).
_PAIR_SCORE = 8.0
# The rows of the pair scores (one pass over their pairs: 0.016-0.022 s at 400 rows and 17
# features), and the backed features of largest model value a checked feature is paired
# with beside the other checked ones. On 200 rows the planted squares design fell from 0.925
# to 0.912 at n = 500 and from 0.988 to 0.975 at 2000, and the even design at n = 500 from 1
# to 0.990, as it did with no backed partners (the interaction x_d x_e beside 0.5 x_d).
_PAIR_ROWS = 400
_PAIR_PARTNERS = 12


# "model+anova": the ANOVA game's work, pairs times features (exact on up to 1224 rows at
# d = 20): on every pair of 3000 rows it would double the default fit's cost. On the model
# game's own rows (1000 at d = 20; 0.08 s less at n = 3000) the selection study's tuning
# half ranked the default 4.43 instead of 4.03 at k = 20% (hmda, 2380 rows at d = 13, lost
# 0.02-0.04 in two folds).
_EVIDENCE_WORK = 1.5e7


def _evidence_rows(n_samples, n_features, random_state=None):
    """The rows of the ANOVA game beside the model game: all while its pairs times the
    features stay within ``_EVIDENCE_WORK``, else a uniform subsample, sorted."""
    most = int((2 * _EVIDENCE_WORK / max(n_features, 1)) ** 0.5)
    return subsample_rows(n_samples, most, random_state)


def _anova_features(features):
    """The ANOVA game's features beside the model game: ``features`` (the model game's) at
    ``features.bandwidths``, the ANOVA game's rule's (the median heuristic's where the model
    game aligns), one scale."""
    return with_bandwidths(replace(features, scales=(1.0,)), features.bandwidths)


def _positive_shares(values):
    """Each value's share of the positive values' sum (0 for the others)."""
    positive = np.maximum(values, 0.0)
    total = positive.sum()
    return positive / total if total > 0 else positive


def _twins(data, shares, columns):
    """Each feature's twin (see :func:`near_copy_shares`) and its r^2 with it, 0 for a
    feature without a near-copy and for those not in ``columns``. The correlations of a
    block of columns at a time, at most ``_COPY_ENTRIES`` of them."""
    twins = np.zeros(shares.size, dtype=np.intp)
    twin_r2 = np.zeros(shares.size)
    centred = data[:, columns]
    centred = centred - centred.mean(axis=0)
    centred /= np.linalg.norm(centred, axis=0)
    step = max(1, _COPY_ENTRIES // columns.size)
    for start in range(0, columns.size, step):
        block = np.arange(start, min(start + step, columns.size))
        r2 = (centred.T @ centred[:, block]) ** 2
        r2[block, np.arange(block.size)] = 0.0  # a column with itself
        r2[r2 < _COPY_R2] = 0.0
        best = (r2 * shares[columns, None]).argmax(axis=0)
        twins[columns[block]] = columns[best]
        twin_r2[columns[block]] = r2[best, np.arange(block.size)]
    return twins, twin_r2


def near_copy_shares(shares, data, numeric, anova_values):
    """``shares`` with each numeric near-copy lifted to at least r^2 times its twin's value.

    A feature's twin is the one of largest r^2 times share among the numeric features whose
    squared correlation r^2 with it (over the rows of ``data``) reaches ``_COPY_R2``. From
    the largest share down, each such feature is lifted to r^2 times its twin's value, but
    at most r^2 times the least value of a feature above it that the ANOVA game backs (an
    ANOVA value of at least ``_EVIDENT_LEVELS`` noise levels, the largest magnitude of a
    negative one; any positive value where none is negative). The result is scaled to add
    up to 1 where a feature was lifted.
    """
    columns = np.flatnonzero(numeric & (np.ptp(data, axis=0) > 0))
    if columns.size < 2:
        return shares
    twins, twin_r2 = _twins(data, shares, columns)
    negative = anova_values[anova_values < 0]
    level = -negative.min() if negative.size else 0.0
    evident = (anova_values > 0) & (anova_values >= _EVIDENT_LEVELS * level)
    lifted = shares.copy()
    # From the top down, so that a copy above another is lifted before it bounds it.
    for j in sorted(np.flatnonzero(twin_r2 > 0), key=lambda j: -shares[j]):
        bound = np.min(lifted[evident & (shares > shares[j])], initial=np.inf)
        lifted[j] = max(shares[j], twin_r2[j] * min(lifted[twins[j]], bound))
    if np.array_equal(lifted, shares):  # also every share 0 (no sum to scale by)
        return shares
    return lifted / lifted.sum()


def _ranking(values, constant):
    """1 for the largest value, 2 for the next, ...; constant features last."""
    order = np.lexsort((-values, constant))
    ranking = np.empty(values.size, dtype=np.intp)
    ranking[order] = np.arange(1, values.size + 1)
    return ranking


class ShapleySelectorBase(SelectorMixin, BaseEstimator):
    """Select features by their exact Shapley share of a kernel statistic."""

    _parameter_constraints = {
        "n_features_to_select": [
            Interval(Integral, 1, None, closed="left"),
            Interval(Real, 0, 1, closed="right"),
        ],
        "threshold": [Interval(Real, None, None, closed="both"), str, None],
        "kernel": [StrOptions({"rbf", "laplacian", "cauchy"})],
        "bandwidth": [
            StrOptions({"auto", "alignment", *BANDWIDTH_RULES}),
            Interval(Real, 0, None, closed="neither"),
        ],
        "categorical_features": ["array-like", StrOptions({"from_dtype"}), None],
        "n_permutations": [Interval(Integral, 0, None, closed="left"), None],
        "correction": [StrOptions(set(CORRECTIONS))],
        "scales": [StrOptions({"auto"}), "array-like"],
        "alpha": [Interval(Real, 0, 1, closed="neither"), None],
        "fdr": [Interval(Real, 0, 1, closed="neither"), None],
        "knockoff_groups": ["array-like", StrOptions({"auto"}), None],
        "n_knockoffs": [Interval(Integral, 1, None, closed="left")],
        "value_function": [StrOptions({"auto", *MODEL_GAMES, *VALUE_FUNCTIONS})],
        "anova_weight": _pairgame.ATTRIBUTION_CONSTRAINTS["anova_weight"],
        "interactions": [StrOptions(set(INDICES) - {"SV", "BV"}), None],
        "random_state": ["random_state"],
        "n_repetitions": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "n_jobs": [Integral, None],
        "memory": [None, str, HasMethods(["cache"])],
        "verbose": ["verbose"],
    }

    # The game value_function="auto" ranks by when no test runs, and the statistic's own
    # game that interaction indices need. "model+anova" ranks: the model game alone left even
    # effects and redundant copies below noise columns on planted designs, and on the
    # selection study's tuning half it was second to "model+anova" at k = 40% (mean rank
    # 3.10 against 2.90 of 9 methods) though first at 20% (3.77 against 4.37); see
    # ANOVA_SHARE.
    _ranked_game = "model+anova"
    _interaction_game = "baseline"
    # Knockoffs' statistic under value_function="auto": the model game alone (the false
    # discovery rate and power of python -m benchmarks.knockoffs were measured with it).
    _knockoff_game = "model"
    # Whether a count or fraction selects only features of positive value (the attributor:
    # a feature that does not raise the MMD does not make the samples differ).
    _positive_only = False

    @property
    def estimator_(self):
        """Deprecated: ``estimate_`` (renamed in 0.2, removed in 0.3)."""
        warnings.warn(
            "estimator_ was renamed estimate_ in 0.2 and will be removed in 0.3.",
            FutureWarning,
            stacklevel=2,
        )
        return self.estimate_

    def _statistic(self, estimate=None):
        """The statistic (see _statistics.py) with this estimator's settings (``estimate``:
        another estimate than ``estimate_``)."""
        raise NotImplementedError

    def _target_rows(self, target, rows):
        """The statistic's target restricted to ``rows``."""
        raise NotImplementedError

    def _target(self, y, y_given):
        """The statistic's target from y validated by scikit-learn (``y_given``: as passed,
        where a pandas dtype may tell labels apart)."""
        raise NotImplementedError

    def _target_gram(self, target, rows):
        """The target's Gram matrix among ``rows``, for ``bandwidth="alignment"``."""
        raise NotImplementedError

    def _ridge_targets(self, target, rows):
        """The outputs the model game's kernel ridge fits on ``rows`` (see _ridge_game.py)."""
        raise NotImplementedError

    def _store_statistic(self, attribution, target):
        """Store the statistic (``hsic_``, ``mmd_``) and what the target's preparation chose."""
        raise NotImplementedError

    def fit(self, X, y):
        """Compute the exact Shapley values of the statistic and select features.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Numeric features; columns listed in ``categorical_features`` may hold any values.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)

        Returns
        -------
        self : object
        """
        # The fit's BLAS calls are small (the alignment's matrix-vector products, eigen-
        # decompositions of at most 400 rows, one Cholesky factorisation of at most 1000):
        # threads only oversubscribe them, up to 2.5x
        # the wall time on two cores. Its large independent pieces take n_jobs instead.
        with one_blas_thread():
            return self._fit(X, y)

    def _fit(self, X, y):
        self._validate_params()
        question = self._question()
        X, y = dates_as_days(from_arrow(X)), from_arrow(y)
        X, y_validated = self._validate_features(X, y)
        target = self._target(y_validated, y)
        # With memory, a fit without a seed draws its subsamples and permutations from a seed
        # of the data, so that a refit on the same data (a grid search over k) finds its
        # ranking in the cache, as scikit-learn's cached pipelines do.
        self._random_state = self.random_state
        if self.random_state is None and self.memory is not None:
            self._random_state = int(joblib.hash((X, y_validated))[:8], 16)
        self.estimate_ = resolve_estimate(
            renamed_estimate(self.estimate, self.estimator),
            X.shape[0],
            X.shape[1],
            self.block_size,
            self.n_repetitions,
        )
        self.value_function_ = question.game(self, *X.shape)
        self.n_repetitions_ = resolve_repetitions(
            self.n_repetitions,
            X.shape[0],
            X.shape[1],
            self.block_size,
            question.tested(self),
            statistic_only=self.value_function_ in MODEL_GAMES,
        )
        if self.value_function_ in MODEL_GAMES and X.shape[0] < MIN_MODEL_SAMPLES:
            raise ValueError(
                f"{spelled('value_function', self.value_function_)} fits a kernel ridge by "
                f"leave-one-out error, which needs at least {MIN_MODEL_SAMPLES} samples; got "
                f"{X.shape[0]}. Rank so few with {spelled('value_function', 'baseline')}."
            )
        # What is costly is cached (with memory set); the key leaves out what only selects.
        memory = check_memory(self.memory)
        features = self._base_features(
            X,
            self._categorical_mask_,
            self.value_function_,
            memory,
            column_names=getattr(self, "feature_names_in_", None),
        )
        if features.constant.all():
            raise ValueError(
                f"Every feature of X is constant (one value in all {X.shape[0]} rows), so no "
                "feature can tell about y or make samples differ, and there is nothing to "
                "rank. Check that the columns passed are the intended ones."
            )
        model_game = self.value_function_ in MODEL_GAMES
        # The model game's chain (alignment, additive terms, ridge) is sequential; with n_jobs the
        # ANOVA game's values and the statistic alone are computed beside it.
        evidence, free_workers = None, self.n_jobs
        if self.value_function_ == "model+anova":
            evidence = beside(self._anova_values, self.n_jobs, features, target, memory)
            # A worker is busy beside: threads beyond the cores would stall the alignment's
            # sweeps, which wait for each other on every evaluation.
            free_workers = max(1, joblib.effective_n_jobs(self.n_jobs) - 1)
        aligned = self._prepare_features(
            features, target, self.value_function_, memory, alignment_jobs=free_workers
        )
        factors = penalty = None
        aligning = resolve_bandwidth_rule(self.bandwidth, self.value_function_) == "alignment"
        n_permutations = question.permutation_count(self, int((~aligned.constant).sum()))
        attribute = memory.cache(_pairgame.attribute, ignore=["n_jobs", "progress"])
        statistic = partial(
            attribute,
            self._statistic(),
            JointFactors(aligned.factors()) if model_game else aligned.factors(),
            target,
            scales=aligned.scales,
            n_permutations=n_permutations,
            correction=self.correction,
            random_state=self._random_state,
            progress=progress_printer(type(self).__name__, self.verbose),
            value_function="baseline" if model_game else self.value_function_,
            anova_weight=self.anova_weight,
            interactions=self.interactions,
            alpha=self.alpha,
        )
        queued_statistic = None
        if model_game and aligning:
            if evidence is not None and evidence.pending():
                # The additive terms wait for the ANOVA game beside; meanwhile the model's
                # factors are built. The statistic (it needs no terms) runs after the ANOVA
                # game on its thread, while this one takes the terms and the explanation:
                # computed here it held up the chain (0.52-0.58 s of wall time at 10^5 rows
                # with n_jobs=2, against 0.45-0.47 s; 0.85-0.92 s with n_jobs=1). On one
                # worker its chunks, and so its bits, are those of a fit with n_jobs=1.
                if n_permutations == 0:
                    queued_statistic = evidence.then(statistic)
                factors = self._model_factors(aligned)
            # While the statistic runs beside, the trials take the other worker alone.
            term_jobs = self.n_jobs if queued_statistic is None else free_workers
            with_terms, penalty = self._with_terms(
                features, aligned, target, memory, evidence, term_jobs
            )
            if not np.array_equal(with_terms.gammas[0], aligned.gammas[0]):
                factors = None  # built before a pair was restored
            aligned = with_terms
        features = aligned
        start_statistic = None
        if queued_statistic is not None:
            attribution = queued_statistic
        elif model_game and n_permutations == 0:
            # Beside the model game's ridge, once its factors (on every worker) are
            # built: beside its factorisation and explanation.
            start_statistic = cache(partial(beside, statistic, self.n_jobs))

            def attribution():
                return start_statistic()()

        else:
            attribution = partial(statistic, n_jobs=self.n_jobs)
        if model_game:
            values = self._model_values(features, target, memory, start_statistic, factors, penalty)
            if evidence is not None:
                anova_values = evidence()
                values = self._model_anova_values(values, anova_values, features, target, memory)
                rows = model_rows(*features.data.shape, self._random_state)
                values = near_copy_shares(
                    values,
                    features.data[rows],
                    np.asarray(features.kernels) != "delta",
                    anova_values,
                )
            attribution = replace(attribution(), values=values)
        else:
            attribution = attribution()
        if not np.any(attribution.values) and not features.constant.all():
            warnings.warn(
                "Every Shapley value is 0, so a selection by value is arbitrary: the kernel "
                "of y or of every feature is constant or the identity over the pairs (too "
                "few samples, or target_bandwidth or bandwidth at an extreme).",
                UserWarning,
                stacklevel=3,
            )
        # Every fitted attribute, in the order the docstrings list them.
        self.shapley_values_ = self.scores_ = attribution.values
        self.shares_ = attribution.shares
        self._store_statistic(attribution, target)
        if attribution.interaction_values is not None:
            self.interaction_values_ = attribution.interaction_values
        self.scales_ = features.scales
        self.ranking_ = _ranking(attribution.values, features.constant)
        # With alpha, the permutations may stop after a first stage (_pairgame.attribute).
        self.n_permutations_ = (
            n_permutations if attribution.tests is None else len(attribution.tests.statistics) - 1
        )
        if attribution.tests is not None:
            self.pvalues_ = attribution.tests.pvalues
            self.adjusted_pvalues_ = attribution.tests.adjusted_pvalues
            self.pvalue_ = attribution.tests.pvalue
            self.statistics_ = attribution.tests.statistics
            self.null_distribution_ = attribution.tests.null_distribution
        self.bandwidths_ = features.bandwidths
        self.gammas_ = features.gammas[0]
        self.kernels_ = list(features.kernels)
        self._constant_mask_ = features.constant
        question.select(self, X, target, attribute, attribution.statistic)
        return self

    def _base_features(self, X, categorical, game, memory, column_names=None):
        """The columns of ``X`` standardised and encoded for ``game``, with the bandwidths
        of its rule (the median heuristic's where the rule is alignment)."""
        bandwidth = resolve_bandwidth_rule(self.bandwidth, game)
        return memory.cache(prepare_features, ignore=["n_jobs"])(
            X,
            categorical,
            kernel=self.kernel,
            bandwidth="median" if bandwidth == "alignment" else bandwidth,
            scales=resolve_selection_scales(self.scales, self.value_function, game),
            column_names=column_names,
            n_jobs=self.n_jobs,
        )

    def _prepare_features(self, features, target, game, memory, alignment_jobs=1):
        """``features`` (from :meth:`_base_features`) ready for ``game``: their bandwidths
        aligned with y where the bandwidth rule says so, and in the model game the
        categorical columns the ridge predicts as well without dropped.
        ``alignment_jobs``: the threads of the alignment's sweeps."""
        bandwidth = resolve_bandwidth_rule(self.bandwidth, game)
        shape = features.data.shape
        mismatch_factors = np.zeros(shape[1])
        if bandwidth == "alignment":
            rows = alignment_rows(*shape, self._random_state)
            bandwidths, mismatch_factors = memory.cache(aligned_bandwidths, ignore=["n_jobs"])(
                features.data[rows],
                features.kernels,
                features.bandwidths,
                features.gammas[0],
                self._target_gram(target, rows),
                align_categories=game in MODEL_GAMES,
                n_jobs=alignment_jobs,
            )
            aligned = with_bandwidths(features, bandwidths)
        else:
            aligned = features
        if game not in MODEL_GAMES:
            return aligned
        rows = check_rows(shape[0], self._random_state)
        mismatch_factors = memory.cache(dropped_categories)(
            features.data[rows],
            features.kernels,
            aligned.gammas[0],
            self._ridge_targets(target, rows),
            mismatch_factors,
        )
        return replace(aligned, mismatch_factors=mismatch_factors)

    def _with_terms(self, features, aligned, target, memory, evidence=None, n_jobs=None):
        """``aligned`` (from :meth:`_prepare_features` in the model game, aligned) with the
        features the alignment set aside that the ridge predicts better with as terms of
        their own (``additive_gammas``: at their parameters in ``features``, or at a finer
        width where the ridge's residuals show an effect finer than that), a set-aside pair
        they show acting together back in the product kernel (its parameters and bandwidths
        those of ``features``), and the ridge's penalty where the trials found it
        (:func:`additive_features`; else None). ``evidence``: a function returning the
        ANOVA game's values, which choose the features tried; ``n_jobs``: the workers the
        trials may take."""
        rows = check_rows(features.data.shape[0], self._random_state)
        arguments = (
            features.data[rows],
            features.kernels,
            aligned.gammas[0],
            features.gammas[0],
            self._ridge_targets(target, rows),
            aligned.mismatch_factors,
        )
        # While the ANOVA game is computed beside, the trials it will choose from start.
        known_fits = {}
        if evidence is not None and evidence.pending():
            known_fits = set_aside_fits(evidence.pending, *arguments)
        terms, penalty, gammas = memory.cache(additive_features, ignore=["n_jobs", "known_fits"])(
            *arguments,
            evidence=None if evidence is None else evidence(),
            n_jobs=n_jobs,
            known_fits=known_fits,
            return_penalty=True,
        )
        restored = gammas != aligned.gammas[0]
        if restored.any():  # a pair back in the product kernel, at the median heuristic's
            aligned = replace(
                aligned,
                gammas=(gammas,),
                bandwidths=np.where(restored, features.bandwidths, aligned.bandwidths),
            )
        return replace(aligned, additive_gammas=terms), penalty

    def _model_factors(self, features):
        """The model game's factors at ``features``' bandwidths (for
        :meth:`_model_values`)."""
        rows = model_rows(*features.data.shape, self._random_state)
        return model_factors(
            features.data[rows], features.kernels, features.gammas[0], features.mismatch_factors
        )

    def _model_values(
        self, features, target, memory, after_factors=None, factors=None, penalty=None
    ):
        """The model game's values (see _ridge_game.py), its ridge at the penalty chosen on
        the check rows (``penalty``, where :meth:`_with_terms` found it); ``after_factors``
        and ``factors`` (from :meth:`_model_factors`) as there."""
        if penalty is None:
            check = check_rows(features.data.shape[0], self._random_state)
            penalty = memory.cache(check_penalty)(
                features.data[check],
                features.kernels,
                features.gammas[0],
                self._ridge_targets(target, check),
                features.mismatch_factors,
                features.additive_gammas,
            )
        rows = model_rows(*features.data.shape, self._random_state)
        return memory.cache(model_values, ignore=["n_jobs", "after_factors", "factors"])(
            features.data[rows],
            features.kernels,
            features.gammas[0],
            self._ridge_targets(target, rows),
            features.mismatch_factors,
            n_jobs=self.n_jobs,
            after_factors=after_factors,
            factors=factors,
            additive_gammas=features.additive_gammas,
            penalty=penalty,
        )

    def _model_anova_values(self, model_values, anova_values, features, target, memory):
        """The values of ``value_function="model+anova"``: each feature's share of the
        model game's values plus ``ANOVA_SHARE`` times its share of the ANOVA game's
        (:meth:`_anova_values`), scaled to add up to 1.

        The model game ranks the features a model should use, but gives a feature the model
        leaves out a value of about 0: an even effect the alignment widened away, or a copy
        of a feature the model already uses. The ANOVA game gives every feature y depends
        on a positive value, however redundant or whatever its shape, and one it does not
        depend on about 0, so such a feature still ranks above the noise, while the
        features the model uses keep their order. A feature the ANOVA game does not back
        keeps ``_UNBACKED_SHARE`` of its model share unless the ridge needs it
        (:meth:`_unbacked`): on few rows the ridge spends some of its fit on a noise column,
        which would then outrank the copies it left out. Every such feature is cut alike, so
        their order among themselves is the model's.
        """
        model_shares = _positive_shares(model_values)
        unbacked = self._unbacked(model_values, anova_values, features, target, memory)
        dropped = (1.0 - _UNBACKED_SHARE) * model_shares[unbacked].sum()
        model_shares[unbacked] *= _UNBACKED_SHARE
        shares = model_shares + ANOVA_SHARE * _positive_shares(anova_values)
        return shares / (1.0 + ANOVA_SHARE - dropped)

    def _unbacked(self, model_values, anova_values, features, target, memory):
        """The features with a positive model value whose ANOVA value is below
        ``_UNBACKED_LEVELS`` times the noise level, the largest magnitude of a negative
        ANOVA value (a feature y does not depend on has an ANOVA value about 0, of either
        sign; without a negative one no feature is unbacked), but for those the ridge needs:
        of them the ``_UNBACKED_TRIES`` of largest model value are checked, and one without
        which the ridge's leave-one-out error rises by ``_NEEDED_GAIN`` or more
        (:func:`drop_one_gains`, on the rows of :func:`drop_rows`) or that acts on y with
        another checked feature or one of the ``_PAIR_PARTNERS`` backed features of largest
        model value (:meth:`_paired`) is backed.

        Cutting only the features checked and not needed (as until 12-07) reordered those
        the ANOVA game does not back: a pure interaction the ridge of 1000 rows learnt but
        200 rows do not show fell below noise columns too weak to be checked. Such a pair is
        now backed by its pair dividend."""
        negative = anova_values[anova_values < 0]
        level = -negative.min() if negative.size else 0.0
        unbacked = (model_values > 0) & (anova_values < _UNBACKED_LEVELS * level)
        candidates = np.flatnonzero(unbacked)
        candidates = candidates[np.argsort(-model_values[candidates], kind="stable")]
        candidates = np.sort(candidates[:_UNBACKED_TRIES])
        if candidates.size == 0:
            return unbacked
        backed = np.flatnonzero((model_values > 0) & ~unbacked)
        partners = backed[np.argsort(-model_values[backed], kind="stable")][:_PAIR_PARTNERS]
        # The pair scores (no parallel part of their own) beside the drop-one check's refits.
        # Their rows are drawn here, before the check's, so that a RandomState instance is
        # drawn from in the same order whatever n_jobs is.
        pair_rows = subsample_rows(features.data.shape[0], _PAIR_ROWS, self._random_state)
        paired = beside(
            lambda n_jobs: self._paired(candidates, partners, pair_rows, features, target),
            self.n_jobs,
        )
        rows = drop_rows(features.data.shape[0], self._random_state)
        gains = memory.cache(drop_one_gains, ignore=["n_jobs"])(
            features.data[rows],
            features.kernels,
            features.gammas[0],
            self._ridge_targets(target, rows),
            candidates,
            features.mismatch_factors,
            features.additive_gammas,
            n_jobs=self.n_jobs,
        )
        unbacked[candidates[gains >= _NEEDED_GAIN]] = False
        unbacked[paired()] = False
        return unbacked

    def _paired(self, candidates, partners, rows, features, target):
        """The ``candidates`` that act on y with another feature: whose standardised pair
        dividend (:func:`~pkex_select._pair_evidence.pair_scores`, at the ANOVA game's
        bandwidths, on ``rows``) with another candidate or one of the ``partners`` reaches
        ``_PAIR_SCORE``."""
        members = np.concatenate([candidates, partners])
        anova = _anova_features(features)
        scores = pair_scores(
            DataFactors(
                anova.data[np.ix_(rows, members)],
                np.asarray(anova.kernels)[members],
                [anova.gammas[0][members]],
                anova.constant[members],
            ),
            self._target_gram(target, rows),
            candidates.size,
        )
        np.fill_diagonal(scores, -np.inf)  # a feature with itself
        return candidates[(scores >= _PAIR_SCORE).any(axis=1)]

    def _anova_values(self, features, target, memory, n_jobs):
        """The ANOVA game's values (one scale) on the rows of :func:`_evidence_rows`;
        ``features``: the model game's from :meth:`_base_features`, whose bandwidths are
        the ANOVA game's rule's (the median heuristic's where the model game aligns)."""
        anova = _anova_features(features)
        rows = _evidence_rows(*features.data.shape, self._random_state)
        estimate = self.estimate_
        if renamed_estimate(self.estimate, self.estimator) == "auto":
            estimate = resolve_estimate(
                "auto", rows.size, features.data.shape[1], self.block_size, self.n_repetitions
            )
        evidence = memory.cache(_pairgame.attribute, ignore=["n_jobs", "progress"])(
            self._statistic(estimate),
            DataFactors(anova.data[rows], anova.kernels, anova.gammas, anova.constant),
            self._target_rows(target, rows),
            random_state=self._random_state,
            n_jobs=n_jobs,
            value_function="anova",
            anova_weight=self.anova_weight,
        )
        return evidence.values

    def _question(self):
        """The question the parameters ask (see _questions.py), checked before any work."""
        if isinstance(self.n_features_to_select, bool):
            raise ValueError(
                f"n_features_to_select must be a number of features (1 or more) or a fraction "
                f"of them in (0, 1], got {self.n_features_to_select!r}."
            )
        if isinstance(self.n_knockoffs, bool):
            raise ValueError(
                f"n_knockoffs must be a whole number of knockoff draws (1 or more), got "
                f"{self.n_knockoffs!r}."
            )
        question = question_of(self)
        question.check(self)
        return question

    def _validate_features(self, X, y):
        """X and y checked by scikit-learn; X's categorical columns found (as objects)."""
        if y is not None:
            check_no_missing(y)
        # pandas gives an Index, polars a list of names.
        columns = getattr(X, "columns", None)
        if columns is not None:
            names = pd.Index(list(columns))
            if names.has_duplicates:
                duplicated = names[names.duplicated()].unique()
                raise ValueError(
                    f"X has duplicate column names: {', '.join(map(str, duplicated))}; give "
                    "every column a name of its own."
                )
        categorical = self.categorical_features
        if isinstance(categorical, str):  # "from_dtype": the frame's text and category columns
            categorical = _non_numeric_columns(X)
        if categorical is not None:
            X, y = validate_data(
                self,
                X,
                y,
                dtype=None,
                multi_output=True,
                ensure_all_finite=False,
                ensure_min_samples=2,
            )
            self._categorical_mask_ = self._resolve_categorical(categorical, X.shape[1])
            return np.asarray(X, dtype=object), y
        self._check_numeric_columns(X)
        X, y = validate_data(
            self, X, y, dtype=np.float64, multi_output=True, ensure_min_samples=2, y_numeric=False
        )
        self._categorical_mask_ = np.zeros(X.shape[1], dtype=bool)
        return X, y

    def _resolve_categorical(self, categorical, n_features):
        spec = np.asarray(categorical)
        mask = np.zeros(n_features, dtype=bool)
        if spec.dtype == bool:
            if spec.shape != (n_features,):
                raise ValueError(f"categorical_features as a mask must have {n_features} entries.")
            return spec.copy()
        names = list(getattr(self, "feature_names_in_", []))
        for item in np.ravel(np.asarray(categorical, dtype=object)).tolist():
            if isinstance(item, str):
                if item not in names:
                    raise ValueError(f"categorical feature {item!r} is not a column of X.")
                mask[names.index(item)] = True
            elif not isinstance(item, Integral) or isinstance(item, bool):
                raise ValueError(
                    "categorical_features must hold column indices (integers), column names "
                    f"or one boolean per column; got {item!r}."
                )
            elif -n_features <= item < n_features:
                mask[item] = True
            else:
                raise ValueError(
                    f"categorical feature index {item} is out of range for {n_features} columns."
                )
        return mask

    def _check_numeric_columns(self, X):
        if not hasattr(X, "columns"):  # arrays: try the conversion validate_data will do
            dtype = getattr(X, "dtype", None)
            if dtype is not None and dtype.kind in "OUS":
                try:
                    np.asarray(X, dtype=np.float64)
                except ValueError:  # strings; other objects raise NumPy's TypeError
                    raise ValueError(non_numeric_message(["some columns"])) from None
            return
        bad = _non_numeric_columns(X)
        if bad is not None:
            raise ValueError(non_numeric_message([str(c) for c in np.asarray(X.columns)[bad]]))

    # ---------------------------------------------------------------- selection

    def transform(self, X):
        """Reduce X to the selected features.

        A pandas frame with pandas output (``set_output(transform="pandas")``) keeps its
        columns as they are; otherwise date and datetime columns come out as days since
        1970-01-01, as the fit read them.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        X_selected : array-like of shape (n_samples, n_selected_features)
        """
        X = from_arrow(X)
        output = get_output_config("transform", self)["dense"]
        if output == "polars" and type(X).__module__.split(".")[0] == "polars":
            # The columns as they are: through NumPy a text column would make every column
            # an object one.
            validate_data(self, X, reset=False, skip_check_array=True)
            return X.select([c for c, kept in zip(X.columns, self.get_support()) if kept])
        frame_kept = isinstance(X, pd.DataFrame) and output == "pandas"
        return super().transform(X if frame_kept else dates_as_days(X))

    def _get_support_mask(self):
        check_is_fitted(self, "shapley_values_")
        return question_of(self).support(self)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.sparse = False
        tags.input_tags.allow_nan = False
        # A frame's text and category columns get the delta kernel.
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        return tags
