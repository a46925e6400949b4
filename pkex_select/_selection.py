"""Shared base of the Shapley-value feature selectors (HSIC and MMD).

The two public estimators differ only in how the pair weights are built from y; everything
else (validation, standardisation, bandwidths, streaming the pairs, permutation p-values,
selection by count, fraction or threshold, tags) lives here once.
"""

import math
import sys
from numbers import Integral, Real

import numpy as np
from pandas.api.types import is_numeric_dtype
from sklearn.base import BaseEstimator
from sklearn.feature_selection import SelectorMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _pairgame
from ._interactions import INDICES
from ._pvalues import (
    CORRECTIONS,
    adjusted_pvalues,
    feature_statistics,
    overall_pvalue,
    permutation_pvalues,
)
from ._statistics import VALUE_FUNCTIONS
from ._validation import check_no_missing, encode_labels, standardise
from .kernels import BANDWIDTH_RULES, bandwidths, gamma_from_bandwidth


class ShapleySelectorBase(SelectorMixin, BaseEstimator):
    """Select features by their exact Shapley share of a kernel statistic."""

    _parameter_constraints = {
        "n_features_to_select": [
            Interval(Integral, 1, None, closed="left"),
            Interval(Real, 0, 1, closed="right"),
        ],
        "threshold": [Real, None],
        "kernel": [StrOptions({"rbf", "laplacian", "cauchy"})],
        "bandwidth": [StrOptions(set(BANDWIDTH_RULES)), Interval(Real, 0, None, closed="neither")],
        "categorical_features": ["array-like", None],
        "n_permutations": [Interval(Integral, 0, None, closed="left")],
        "correction": [StrOptions(set(CORRECTIONS))],
        "scales": [StrOptions({"auto"}), "array-like"],
        "alpha": [Interval(Real, 0, 1, closed="neither"), None],
        "value_function": [StrOptions(set(VALUE_FUNCTIONS))],
        "interactions": [StrOptions(set(INDICES) - {"SV", "BV"}), None],
        "random_state": ["random_state"],
        "n_jobs": [Integral, None],
        "verbose": ["verbose"],
    }
    # Set by subclasses: the name of the fitted statistic ("hsic_", "mmd_").
    _statistic_name = ""

    def _statistic(self):
        """The statistic (see _statistics.py) with this estimator's settings."""
        raise NotImplementedError

    def _validate_target(self, y, target):
        """Check y (validated by scikit-learn) and return the statistic's target.

        ``target`` is y as the user passed it (a pandas dtype may tell labels apart).
        """
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
        self._validate_params()
        if self.alpha is not None and self.n_permutations == 0:
            raise ValueError(
                "alpha selects the features whose adjusted permutation p-value is at most "
                "alpha; set n_permutations (for example 999) as well."
            )
        if self.alpha is not None and self.threshold is not None:
            raise ValueError("Set either threshold or alpha, not both.")
        if y is not None:
            check_no_missing(y)
        X, validated = self._validate_features(X, y)
        target = self._validate_target(validated, y)
        factors = self._factors(X)
        attribution = _pairgame.attribute(
            self._statistic(), factors, target, X.shape[0],
            n_permutations=self.n_permutations, random_state=self.random_state,
            n_jobs=self.n_jobs, progress=self._progress, value_function=self.value_function,
            interactions=self.interactions,
        )
        values = attribution.values
        if self.interactions is not None:
            self.interaction_values_ = attribution.interaction_values
        self.shapley_values_ = values[0]
        self.scores_ = self.shapley_values_
        setattr(self, self._statistic_name, float(values[0].sum()))
        if self.n_permutations:
            self.null_distribution_ = values[1:]
            tested = feature_statistics(attribution.scale_values)
            self.pvalues_ = permutation_pvalues(tested)
            self.adjusted_pvalues_ = adjusted_pvalues(tested, self.correction,
                                                      ~self._constant_mask_)
            self.statistics_ = attribution.scale_statistics
            self.pvalue_ = overall_pvalue(tested, self.statistics_, self.scales_)
        # Constant columns carry no information: they rank last and are never selected.
        order = np.lexsort((-self.shapley_values_, self._constant_mask_))
        self.ranking_ = np.empty(X.shape[1], dtype=np.intp)
        self.ranking_[order] = np.arange(1, X.shape[1] + 1)
        return self

    def _progress(self, done, total):
        if self.verbose and (done == total or done % max(1, total // 20) == 0):
            print(f"\r[{type(self).__name__}] {done}/{total} blocks of pairs",
                  end="\n" if done == total else "", file=sys.stderr, flush=True)

    def _validate_features(self, X, y):
        columns = getattr(X, "columns", None)
        if columns is not None and columns.has_duplicates:
            duplicated = columns[columns.duplicated()].unique()
            raise ValueError(
                f"X has duplicate column names: {', '.join(map(str, duplicated))}; give every "
                "column a name of its own."
            )
        if self.categorical_features is not None:
            X, y = validate_data(self, X, y, dtype=None, multi_output=True,
                                 ensure_all_finite=False, ensure_min_samples=2)
            X = np.asarray(X, dtype=object)
            self._categorical_mask_ = self._resolve_categorical(X.shape[1])
            numeric = ~self._categorical_mask_
            columns = np.empty(X.shape, dtype=np.float64)
            for j in np.flatnonzero(numeric):
                columns[:, j] = self._to_float(X[:, j], j)
            for j in np.flatnonzero(self._categorical_mask_):
                what = f"categorical column {self._column_name(j)}"
                columns[:, j] = encode_labels(X[:, j], what)[1]
            if not np.all(np.isfinite(columns[:, numeric])):
                raise ValueError("Input X contains NaN or infinity.")
            return columns, y
        self._check_numeric_columns(X)
        X, y = validate_data(self, X, y, dtype=np.float64, multi_output=True,
                             ensure_min_samples=2, y_numeric=False)
        self._categorical_mask_ = np.zeros(X.shape[1], dtype=bool)
        return X, y

    def _resolve_categorical(self, n_features):
        spec = np.asarray(self.categorical_features)
        mask = np.zeros(n_features, dtype=bool)
        if spec.dtype == bool:
            if spec.shape != (n_features,):
                raise ValueError(
                    f"categorical_features as a mask must have {n_features} entries."
                )
            return spec.copy()
        names = list(getattr(self, "feature_names_in_", []))
        for item in np.ravel(np.asarray(self.categorical_features, dtype=object)).tolist():
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
                    f"categorical feature index {item} is out of range for {n_features} "
                    "columns."
                )
        return mask

    def _to_float(self, column, j):
        try:
            return column.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError(self._non_numeric_message([self._column_name(j)])) from None

    def _column_name(self, j):
        names = getattr(self, "feature_names_in_", None)
        return str(names[j]) if names is not None else f"column {j}"

    def _non_numeric_message(self, columns):
        return (
            f"X has non-numeric values in {', '.join(map(str, columns))}. Declare such "
            "columns in categorical_features=[...] (they then get a delta kernel) or encode "
            "them as numbers."
        )

    def _check_numeric_columns(self, X):
        if not hasattr(X, "columns"):  # arrays: try the conversion validate_data will do
            dtype = getattr(X, "dtype", None)
            if dtype is not None and dtype.kind in "OUS":
                try:
                    np.asarray(X, dtype=np.float64)
                except ValueError:  # strings; other objects raise NumPy's TypeError
                    raise ValueError(self._non_numeric_message(["some columns"])) from None
            return
        bad = [str(c) for c, dtype in zip(X.columns, X.dtypes) if not is_numeric_dtype(dtype)]
        if bad:
            raise ValueError(self._non_numeric_message(bad))

    def _factors(self, X):
        """Standardise numeric columns, choose their kernels and bandwidths: the pair factors."""
        numeric = ~self._categorical_mask_
        Xs = X.copy()
        Xs[:, numeric] = standardise(X[:, numeric])[0]
        self._constant_mask_ = np.all(X == X[:1], axis=0)
        self.bandwidths_ = np.ones(X.shape[1])
        if numeric.any():
            self.bandwidths_[numeric] = bandwidths(Xs[:, numeric], self.bandwidth)
        self.kernels_ = [
            "delta" if categorical else self.kernel for categorical in self._categorical_mask_
        ]
        self.scales_ = self._resolve_scales(int(numeric.sum()))
        gammas = [self._gammas(scale) for scale in self.scales_]
        self.gammas_ = gammas[0]
        return _pairgame.DataFactors(Xs, self.kernels_, gammas)

    def _gammas(self, scale):
        """Kernel parameters with the numeric bandwidths times ``scale`` (delta has none)."""
        return np.array([
            gamma_from_bandwidth(kernel, s if kernel == "delta" else s * scale)
            for kernel, s in zip(self.kernels_, self.bandwidths_)
        ])

    def _resolve_scales(self, n_numeric):
        if isinstance(self.scales, str):  # "auto": the ranking scale and a test scale
            return (1.0, math.sqrt(n_numeric)) if n_numeric > 1 else (1.0,)
        scales = np.asarray(self.scales, dtype=np.float64)
        if scales.ndim != 1 or scales.size == 0 or not np.all(np.isfinite(scales) & (scales > 0)):
            raise ValueError(
                f"scales must be 'auto' or a non-empty list of positive numbers; got "
                f"{self.scales!r}."
            )
        return tuple(scales.tolist())

    # ---------------------------------------------------------------- selection

    def _n_selected(self):
        n_features = self.n_features_in_
        if isinstance(self.n_features_to_select, Integral):
            return min(int(self.n_features_to_select), n_features)
        return max(1, math.ceil(self.n_features_to_select * n_features))

    def _get_support_mask(self):
        check_is_fitted(self, "shapley_values_")
        if self.alpha is not None:
            return (self.adjusted_pvalues_ <= self.alpha) & ~self._constant_mask_
        if self.threshold is not None:
            return (self.shapley_values_ >= self.threshold) & ~self._constant_mask_
        return (self.ranking_ <= self._n_selected()) & ~self._constant_mask_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.sparse = False
        tags.input_tags.allow_nan = False
        return tags
