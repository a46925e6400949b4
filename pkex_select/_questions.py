"""The three questions a selector answers, one small rule each.

- :class:`Ranking` (``n_features_to_select`` or ``threshold``): which features should a
  model use? The largest values.
- :class:`FamilyWiseTest` (``alpha``): which features is y related to, at a family-wise
  error rate? The adjusted permutation p-values at most alpha.
- :class:`Knockoffs` (``fdr``): which features tell about y what the others do not, at a
  false discovery rate? Model-X knockoffs, with a statistic from _knockoff_statistics.py.

A selector keeps flat parameters (grid searches set them one by one); :func:`question_of`
reads which question they ask, and the question checks the parameters it reads, resolves the
game ``value_function="auto"`` stands for, and owns the support mask. This is the one place
the questions branch: a fourth is a class here and a line in :func:`question_of`.
"""

import math
import warnings
from numbers import Integral

import numpy as np

from . import knockoffs
from ._knockoff_statistics import knockoff_statistic
from ._pvalues import permutations_needed, smallest_adjusted_pvalue
from ._ridge_game import MODEL_GAMES, most_model_rows
from ._spelling import spelled
from ._validation import column_names

__all__ = [
    "FamilyWiseTest",
    "TooFewPermutationsWarning",
    "Knockoffs",
    "Ranking",
    "question_of",
    "resolve_value_function",
    "tests_affordable",
]

# Permutations when alpha asks for selection and n_permutations is None (measured: 999 keep a
# feature shifted by 0.5 sd among 20 in 0.890 of 400 runs, 199 in 0.868).
DEFAULT_SELECTION_PERMUTATIONS = 999
# Up to this many features value_function="auto" ranks by the selector's ranked game, beyond
# by the ANOVA game: the model game's rows shrink as 1/sqrt(d) to bound its memory
# (most_model_rows: 500 at d = 100, 353 at 200), and where n is well above them the ANOVA
# game of every row reads more (python -m benchmarks.selection.planted --repetitions 10
# --features 200 --sizes 200 350 500 1000 2000 --methods default model+anova anova trees: at
# n = 2000 the model game beside the ANOVA game had recall 0.94 and 0.97 on the even and
# blocks designs, the ANOVA game 1.00 and 1.00). The paper's factors, far from 1, need about
# d/2 quadrature nodes per pair (12 s at n = 100, d = 2000, against 0.7 s for the ANOVA game,
# whose weight 6/d keeps its factors near 1).
RANKED_GAME_MAX_FEATURES = 100
# Beyond RANKED_GAME_MAX_FEATURES a model game still ranks where its rows hold the whole
# sample, up to this many features: at d = 200 it then read more than the ANOVA game on every
# planted design (same command: at n = 200 and 350, recall 0.78 and 0.96 against 0.52 and
# 0.78 on the even design, 0.97 and 1.00 against 0.68 and 0.83 on blocks). At d = 500 and
# 1000 (--features 500 --sizes 200, --features 1000 --sizes 150) it found more too, but let a
# noise column above a near-copy on 1 and 3 of 10 redundant data sets (2 and 5 before
# near-copies were lifted), where the ANOVA game kept every copy above the noise.
WHOLE_SAMPLE_MAX_FEATURES = 200


class TooFewPermutationsWarning(UserWarning):
    """``alpha`` can select no feature: the permutations are too few for an adjusted p-value
    to reach it (the command line refuses such a run before it starts)."""


def resolve_value_function(
    value_function, tested, n_features, ranked_game="baseline", n_samples=None
):
    """The game that ``value_function="auto"`` stands for (others unchanged), given whether
    permutation tests run and the data's shape (``n_samples`` None: its width alone).

    Each question gets the game that answers it best. Which features y is related to, tested
    by permutations, is the ANOVA game's question: a relevant feature beside a dominant one
    keeps a positive value and a small p-value. The tests take its interactions of at most
    two features ("pairwise_anova"): two null features that copy each other have centred
    factors whose product is positive on average, so each term of three or more features
    that holds both and a relevant one gives them a share of that feature's dependence on y,
    which permuting y removes (``benchmarks.games.correlated_nulls``: kept on every data set
    at n = 1500, d = 6). Terms of at most two features have the same mean observed and
    permuted whenever the nulls are independent of y and of the relevant features. The k
    features a model should use are ranked by ``ranked_game`` (for HSIC the model game,
    which values a feature by how far a kernel ridge of y fitted on every feature moves with
    it) up to ``RANKED_GAME_MAX_FEATURES`` features, a model game up to
    ``WHOLE_SAMPLE_MAX_FEATURES`` where its rows hold all ``n_samples``, and by the ANOVA
    game beyond.
    """
    if value_function != "auto":
        return value_function
    if tested:
        return "pairwise_anova"
    if n_features <= RANKED_GAME_MAX_FEATURES:
        return ranked_game
    whole_sample = n_samples is not None and n_samples <= most_model_rows(n_features)
    if ranked_game in MODEL_GAMES and whole_sample and n_features <= WHOLE_SAMPLE_MAX_FEATURES:
        return ranked_game
    return "anova"


def tests_affordable(selector, n_samples, n_features):
    """Whether ``selector`` can test every feature at alpha in seconds on data of this shape:
    where it attributes an exact estimate (its 999 permutations cost one matrix product per
    chunk of pairs; ``python -m benchmarks.scale``), not the block estimate of large data,
    and from 10 samples on (fewer have too few distinct permutations for a p-value of 0.05
    after correction). The command line tests by default where this holds."""
    from ._selection import resolve_estimate  # _selection imports this module

    estimate = resolve_estimate(
        selector.estimate, n_samples, n_features, selector.block_size, selector.n_repetitions
    )
    return n_samples >= 10 and estimate != "block"


def threshold_value(threshold, values):
    """The number a ``threshold`` stands for, as in scikit-learn's SelectFromModel: a
    number as it is, "mean" or "median" of ``values``, or a multiple such as "1.5*mean"."""
    if not isinstance(threshold, str):
        return threshold
    scale, _, statistic = threshold.strip().rpartition("*")
    statistics = {"mean": np.mean, "median": np.median}
    try:
        factor = float(scale) if scale else 1.0
    except ValueError:
        factor = None
    if factor is None or statistic.strip() not in statistics or not np.isfinite(factor):
        raise ValueError(
            f"threshold must be a number, 'mean', 'median' or a multiple such as "
            f"'1.5*mean'; got {threshold!r}."
        )
    return factor * statistics[statistic.strip()](values) if len(values) else np.inf


def question_of(selector):
    """The question ``selector``'s parameters ask: at most one of threshold, alpha and fdr
    is set; none of them asks for the ``n_features_to_select`` largest values."""
    rules = [name for name in ("threshold", "alpha", "fdr") if getattr(selector, name) is not None]
    if len(rules) > 1:
        raise ValueError(f"Set one of threshold, alpha and fdr, not {' and '.join(rules)}.")
    if selector.alpha is not None:
        return FamilyWiseTest()
    if selector.fdr is not None:
        return Knockoffs()
    return Ranking()


class Question:
    """What the three questions share: the game that ranks, permutations on request."""

    def tested(self, selector):
        """Whether the fit runs permutation tests."""
        return bool(selector.n_permutations)

    def check(self, selector):
        """Refuse parameters that contradict each other, before any work."""
        tested = self.tested(selector)
        if selector.bandwidth == "alignment" and tested:
            # Knockoffs may use y (the statistic is computed on [X, X~] and treats a column
            # and its knockoff alike); a permutation test may not.
            raise ValueError(
                "bandwidth='alignment' chooses the bandwidths with y, so permutation tests "
                "(alpha, n_permutations) would have to choose them again on every permuted "
                "copy; they are not valid with it. Use bandwidth='auto' (the median heuristic "
                "for tests) with them."
            )
        if selector.value_function in MODEL_GAMES and (tested or selector.interactions):
            raise ValueError(
                f"{spelled('value_function', selector.value_function)} ranks the features a "
                "kernel model fitted to y uses; it has no permutation tests "
                f"({spelled('alpha')}, {spelled('n_permutations')}) or interaction indices. "
                f"Use {spelled('value_function', 'auto')} with them (the ANOVA game for "
                "tests, the paper's game for interactions)."
            )

    def game(self, selector, n_samples, n_features):
        """The game whose values the fit computes (interaction indices need a game of the
        statistic, not of a model)."""
        ranked = selector._ranked_game
        if selector.interactions is not None:
            ranked = selector._interaction_game
        return resolve_value_function(
            selector.value_function, self.tested(selector), n_features, ranked, n_samples
        )

    def permutation_count(self, selector, family_size):
        """The permutations the fit runs."""
        return selector.n_permutations or 0

    def select(self, selector, X, target, attribute, statistic):
        """Work the question needs beyond the values and tests (knockoffs draw theirs)."""

    def support(self, selector):
        raise NotImplementedError


class Ranking(Question):
    """The ``n_features_to_select`` largest values, or those at least ``threshold``."""

    def check(self, selector):
        super().check(selector)
        threshold_value(selector.threshold, np.zeros(0))  # a malformed string fails at fit

    def n_selected(self, selector):
        n_features = selector.n_features_in_
        if isinstance(selector.n_features_to_select, Integral):
            return min(int(selector.n_features_to_select), n_features)
        return max(1, math.ceil(selector.n_features_to_select * n_features))

    def support(self, selector):
        varying = ~selector._constant_mask_
        values = selector.shapley_values_
        if selector.threshold is not None:
            return (values >= threshold_value(selector.threshold, values[varying])) & varying
        ranked = (selector.ranking_ <= self.n_selected(selector)) & varying
        return ranked & (values > 0) if selector._positive_only else ranked

    def select(self, selector, X, target, attribute, statistic):
        """Warn when the count asks for more features than there are, or (where only positive
        values count, ``_positive_only``) than have a positive value."""
        if selector.threshold is not None:
            return
        asked = selector.n_features_to_select
        if isinstance(asked, Integral) and asked > selector.n_features_in_:
            warnings.warn(
                f"{spelled('n_features_to_select', asked)} is more than the "
                f"{selector.n_features_in_} features there are; every feature that varies is "
                "selected.",
                UserWarning,
                stacklevel=4,
            )
        if not selector._positive_only:
            return
        positive = int(np.sum((selector.shapley_values_ > 0) & ~selector._constant_mask_))
        asked = self.n_selected(selector)
        if positive < asked:
            warnings.warn(
                f"Only {positive} of the {asked} features asked for have a positive value "
                f"(the statistic is {statistic:.3g}): the others do not make "
                "the samples differ, so they are not selected. Test whether the samples "
                f"differ at all with {spelled('alpha')} (or {spelled('n_permutations')}).",
                UserWarning,
                stacklevel=4,
            )


class FamilyWiseTest(Question):
    """The features whose adjusted permutation p-value is at most ``alpha``."""

    def tested(self, selector):
        return True

    def check(self, selector):
        if selector.n_permutations == 0:
            raise ValueError(
                f"{spelled('alpha')} selects the features whose adjusted permutation p-value "
                f"is at most alpha, and {spelled('n_permutations', 0)} runs no permutations; "
                f"leave {spelled('n_permutations')} out (999, or as many as the correction "
                f"needs) or set it, for example {spelled('n_permutations', 999)}."
            )
        super().check(selector)

    def permutation_count(self, selector, family_size):
        """``n_permutations``, or for None enough to select at alpha; a count too small for
        the correction to reach alpha gets a warning that says how many are needed."""
        alpha, correction = selector.alpha, selector.correction
        needed = permutations_needed(correction, alpha, family_size)
        if selector.n_permutations is None:
            return max(DEFAULT_SELECTION_PERMUTATIONS, needed)
        smallest = smallest_adjusted_pvalue(correction, selector.n_permutations, family_size)
        if smallest > alpha:
            warnings.warn(
                f"With {spelled('n_permutations', selector.n_permutations)} the smallest "
                f"adjusted p-value the {correction} correction can give over {family_size} "
                f"features is {smallest:.3g}, above {spelled('alpha', alpha)}: no feature can "
                f"be selected. Use {spelled('n_permutations', needed)} or more (or leave it "
                "out)" + (", or the maxT correction." if correction != "maxT" else "."),
                TooFewPermutationsWarning,
                stacklevel=4,
            )
        return selector.n_permutations

    def support(self, selector):
        if not hasattr(selector, "adjusted_pvalues_"):
            raise ValueError(
                "alpha selects by the adjusted permutation p-values, but this fit had no "
                "permutations (alpha was set after fit); fit again with alpha set."
            )
        return (selector.adjusted_pvalues_ <= selector.alpha) & ~selector._constant_mask_


class Knockoffs(Question):
    """The features (or groups) model-X knockoffs select at false discovery rate ``fdr``."""

    def statistic_game(self, selector, n_columns):
        """The game of the knockoff statistic on ``n_columns`` columns [X, X~]."""
        return resolve_value_function(
            selector.value_function, False, n_columns, selector._knockoff_game
        )

    def select(self, selector, X, target, attribute, statistic):
        """Model-X knockoffs (see :mod:`pkex_select.knockoffs`): W per group and draw, the
        derandomised selection at false discovery rate ``fdr``."""
        if selector._categorical_mask_.any():
            names = column_names(selector, selector._categorical_mask_)
            raise ValueError(
                f"{spelled('fdr')} builds Gaussian knockoffs, which need numeric features; "
                f"{names} are categorical. One-hot encode them (the knockoffs of 0/1 columns "
                "then match their first two moments only) or select with "
                f"{spelled('alpha')}."
            )
        varying = np.flatnonzero(~selector._constant_mask_)
        if varying.size == 0:
            raise ValueError("fdr needs at least one feature that varies; all are constant.")
        groups = selector.knockoff_groups
        if not isinstance(groups, str) and groups is not None:
            groups = self.group_labels(selector, groups)[varying]
        design = knockoffs.knockoff_design(X[:, varying], groups)
        labels = design.labels
        W_statistic = knockoff_statistic(
            selector, self.statistic_game(selector, 2 * varying.size), attribute
        )
        statistics, names = [], []
        for knockoff in design.sample(selector.n_knockoffs, selector._random_state):
            statistics.append(
                np.bincount(labels, weights=W_statistic.fit(design.standardised, knockoff, target))
            )
            names.append(W_statistic.name_)
        statistics = np.array(statistics)
        fdr = selector.fdr
        selected, e_values, thresholds = knockoffs.derandomised_selection(
            statistics, fdr, fdr if selector.n_knockoffs == 1 else fdr / 2
        )
        selector.knockoff_shrinkage_ = design.shrunk
        selector.e_values_, selector.knockoff_thresholds_ = e_values, thresholds
        selector.knockoff_statistics_ = statistics
        selector.knockoff_groups_ = np.full(selector.n_features_in_, -1, dtype=np.intp)
        selector.knockoff_groups_[varying] = labels
        selector.selected_groups_ = np.flatnonzero(selected)
        selector.knockoff_value_functions_ = np.array(names)
        if not selected.any():
            several = (
                "" if selector.n_knockoffs == 1 else " (about twice as many over several draws)"
            )
            warnings.warn(
                f"No feature selected at {spelled('fdr', fdr)}: knockoff+ selects only "
                f"when at least {math.ceil(1 / fdr)} features (or groups) have a statistic "
                f"above its threshold and none below minus it{several}, so with fewer "
                f"relevant ones it selects nothing ({labels.max() + 1} groups here). Use a "
                f"larger {spelled('fdr')}{' (0.2 or more)' if fdr < 0.2 else ''}, or ask "
                f"another question: {spelled('alpha')} (every feature y is related to) or "
                f"{spelled('n_features_to_select')}.",
                UserWarning,
                stacklevel=4,
            )

    @staticmethod
    def group_labels(selector, groups):
        """``knockoff_groups`` checked: one integer or string label per feature."""
        n_features = selector.n_features_in_
        message = (
            f"knockoff_groups must hold one label per feature (an integer or a string), "
            f"{n_features} in all, so that each feature is in exactly one group "
            "(groups do not overlap)"
        )
        try:
            labels = np.asarray(groups)
        except ValueError:  # NumPy's "inhomogeneous shape": nested lists of differing sizes
            raise ValueError(f"{message}; got nested lists.") from None
        if labels.shape != (n_features,):
            raise ValueError(f"{message}; got shape {labels.shape}.")
        bad = [
            label
            for label in labels.tolist()
            if isinstance(label, bool) or not isinstance(label, (Integral, str))
        ]
        if bad:
            raise ValueError(f"{message}; got {bad[0]!r}.")
        return labels

    def support(self, selector):
        if not hasattr(selector, "e_values_"):
            raise ValueError(
                "fdr selects by knockoffs, but this fit had none (fdr was set after fit); fit "
                "again with fdr set."
            )
        return np.isin(selector.knockoff_groups_, selector.selected_groups_)
