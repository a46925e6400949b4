"""Exact local explanations of fitted scikit-learn product-kernel models."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy.sparse import issparse
from sklearn.utils.validation import check_array

from . import _models
from ._engine import pair_contributions, point_values
from ._gp_uncertainty import data_covariance, prior_covariance
from ._interactions import INDICES, check_index, interaction_values
from ._models import as_dense, fitted_state, read_model
from ._quadrature import DEFAULT_TOL
from ._scheduling import rows_per_task
from ._validation import from_arrow
from .kernels import factor_tensor

__all__ = ["Explanation", "ProductKernelExplainer"]


@dataclass
class Explanation:
    """Shapley values (or interaction indices) of a batch of rows and what they add up to.

    Attributes
    ----------
    values : ndarray of shape (n_samples, n_features) or (n_samples, n_features, n_outputs)
        For an index of order 2, shape (n_samples, n_features, n_features) (plus the outputs'
        axis): see :func:`pkex_select.interaction_values` for what the diagonal holds.
    base_values : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        Model output with every feature removed, intercept included: every kernel factor 1
        (baseline value function) or its background mean (observational).
        ``values.sum(axis=1) + base_values`` is the model output for Shapley values.
    data : ndarray of shape (n_samples, n_features)
        The rows explained, as given (before any pipeline scaling).
    feature_names : list of str
    output_names : list of str
        What each output is ("decision_function", "predict", "0 vs 1", ...).
    index : str, default="SV"
        The index of ``values`` (shapiq's names: "SV", "BV", "SII", "STII", ...).
    covariance : ndarray of shape (n_samples, n_features, n_features) or None
        The posterior covariance of each row's Shapley values, for a Gaussian process
        explained with ``return_covariance=True`` (a trailing outputs axis for several
        outputs); else None.
    """

    values: np.ndarray
    base_values: np.ndarray
    data: np.ndarray
    feature_names: list
    output_names: list
    index: str = "SV"
    covariance: np.ndarray | None = None

    @property
    def std(self) -> np.ndarray | None:
        """The posterior standard deviation of each value (the covariance's diagonal), or
        None without a covariance."""
        if self.covariance is None:
            return None
        diagonal = np.diagonal(self.covariance, axis1=1, axis2=2)
        # (n, outputs, d) for several outputs: back to the values' layout.
        diagonal = np.moveaxis(diagonal, -1, 1) if diagonal.ndim == 3 else diagonal
        return np.sqrt(np.maximum(diagonal, 0.0))

    def __len__(self):
        return self.values.shape[0]

    @property
    def max_order(self) -> int:
        """1 for per-feature values, 2 for pairwise interaction indices."""
        return INDICES[self.index]

    def __getitem__(self, key):
        """Rows, features or both: ``e[0]``, ``e[:5]``, ``e["age"]``, ``e[mask, ["a", "b"]]``.

        Rows are selected like a NumPy array's first axis, but an explanation always keeps
        its rows axis (``e[0]`` is the first row as an explanation of one row). Features are
        selected by name, position, slice or boolean mask; a string or list of strings alone
        selects features. A subset of the features keeps the base values, so its values no
        longer add up to the model output.
        """
        if isinstance(key, tuple):
            if len(key) != 2:
                raise IndexError(
                    f"an Explanation is indexed by rows and features; got {len(key)} indices."
                )
            rows, features = key
        elif isinstance(key, str) or (
            isinstance(key, list) and key and all(isinstance(k, str) for k in key)
        ):
            rows, features = slice(None), key
        else:
            rows, features = key, slice(None)
        rows = np.arange(len(self))[rows]
        rows = np.atleast_1d(rows)
        columns = self._feature_positions(features)
        values = np.take(self.values[rows], columns, axis=1)
        if self.max_order == 2:
            values = np.take(values, columns, axis=2)
        covariance = self.covariance
        if covariance is not None:
            covariance = np.take(np.take(covariance[rows], columns, axis=1), columns, axis=2)
        return Explanation(
            values=values,
            base_values=np.asarray(self.base_values)[rows],
            data=self.data[rows][:, columns],
            feature_names=[self.feature_names[j] for j in columns],
            output_names=list(self.output_names),
            index=self.index,
            covariance=covariance,
        )

    def _feature_positions(self, features):
        positions = np.arange(len(self.feature_names))
        names = [features] if isinstance(features, str) else features
        if isinstance(names, list) and all(isinstance(name, str) for name in names):
            missing = [name for name in names if name not in self.feature_names]
            if missing:
                raise KeyError(
                    f"no feature named {', '.join(map(repr, missing))}; the features are "
                    f"{self.feature_names}."
                )
            return np.array([self.feature_names.index(name) for name in names], dtype=np.intp)
        return np.atleast_1d(positions[features])

    def __repr__(self):
        shown = ", ".join(map(str, self.feature_names[:8]))
        more = f", ... ({len(self.feature_names)} in all)" if len(self.feature_names) > 8 else ""
        outputs = (
            f", outputs [{', '.join(map(str, self.output_names))}]"
            if self.values.ndim == 2 + self.max_order
            else ""
        )
        rows = f"{len(self)} row" + ("" if len(self) == 1 else "s")
        return (
            f"Explanation(index={self.index!r}, {rows}, values of shape "
            f"{self.values.shape}, features [{shown}{more}]{outputs})"
        )

    def _repr_html_(self):
        """The first rows as a table in notebooks (values of the first output, base value)."""
        import html

        header = html.escape(repr(self))
        if self.max_order != 1:
            return f"<p><code>{header}</code></p>"
        values = self.values if self.values.ndim == 2 else self.values[..., 0]
        base = np.asarray(self.base_values)
        base = base if base.ndim == 1 else base[:, 0]
        table = pd.DataFrame(values[:10], columns=list(map(str, self.feature_names)))
        table.insert(0, "base value", base[:10])
        table.index.name = "row"
        caption = "" if len(self) <= 10 else f"<p>first 10 of {len(self)} rows</p>"
        return (
            f"<p><code>{header}</code></p>{table.to_html(float_format='{:.4g}'.format)}" + caption
        )

    def _check_order_one(self, what):
        if self.max_order != 1:
            raise ValueError(
                f"{what} needs per-feature values; this explanation holds {self.index} "
                "interactions (n_samples, n_features, n_features). Use explain(X) for "
                "Shapley values, or read the matrix from .values."
            )

    def centred(self) -> Explanation:
        """The values minus each feature's mean over the rows, the base values plus those means.

        Each row's values still add up to its output, and the base value becomes the mean
        output over the explained rows (shap's convention). Under the baseline value function
        a removed feature acts as if the row matched every expansion point on it, so each
        feature's values share a constant offset that says nothing about the row; centring
        removes it and keeps what moves the output from row to row.
        """
        self._check_order_one("centred()")
        if len(self) < 2:
            raise ValueError(
                "centring over one row leaves only zeros; explain several rows (for example "
                "a sample of the data) and index the centred explanation afterwards."
            )
        means = self.values.mean(axis=0)
        return Explanation(
            values=self.values - means,
            base_values=np.asarray(self.base_values) + means.sum(axis=0),
            data=self.data,
            feature_names=list(self.feature_names),
            output_names=list(self.output_names),
            index=self.index,
        )

    def to_frame(self) -> pd.DataFrame:
        """The values as a pandas DataFrame (columns: features, or (output, feature) pairs)."""
        self._check_order_one("to_frame()")
        if self.values.ndim == 2:
            return pd.DataFrame(self.values, columns=list(self.feature_names))
        columns = pd.MultiIndex.from_product(
            [self.output_names, self.feature_names], names=["output", "feature"]
        )
        flat = np.swapaxes(self.values, 1, 2).reshape(len(self), -1)
        return pd.DataFrame(flat, columns=columns)

    def to_shap(self, centred: bool = True):
        """A :class:`shap.Explanation`, so that shap's plots can be used (needs shap).

        Parameters
        ----------
        centred : bool, default=True
            Hand over :meth:`centred` values: each feature's values minus their mean over
            the explained rows, and as base value the mean output, as shap's own explainers
            give. shap's global plots (bar, beeswarm) rank by ``mean |value|``, which on the
            uncentred values of the baseline value function ranks a per-feature offset
            rather than what the feature does. ``centred=False`` hands over the exact
            values of the removal game and its base value (every kernel factor removed);
            both add up to the model output row by row.
        """
        self._check_order_one("to_shap()")
        try:
            import shap
        except ImportError as error:
            raise ImportError("to_shap() needs the shap package: pip install shap") from error
        explanation = self.centred() if centred else self
        return shap.Explanation(
            values=explanation.values,
            base_values=explanation.base_values,
            data=self.data,
            feature_names=list(self.feature_names),
            output_names=list(self.output_names) if self.values.ndim == 3 else None,
        )


class ProductKernelExplainer:
    """Exact Shapley values and interaction indices of fitted product-kernel models.

    The model output is ``f(x) = sum_i w_i prod_j k_j(X_ij, x_j) + b``. With the default
    ``value_function="baseline"`` a feature is removed by setting its kernel factor to 1 (an
    infinite bandwidth); no background data and no sampling are involved. With
    ``"observational"`` the factor of a removed feature j becomes its mean over background
    rows, ``nu_ij = mean_b k_j(background_bj, X_ij)``: the removed feature takes the values
    the data give it, as in the published authors' current code. Either game is solved
    exactly, for all features at once, by :func:`pkex_select.interaction_values`.

    Parameters
    ----------
    model : fitted estimator
        ``SVC``, ``NuSVC``, ``SVR``, ``NuSVR``, ``OneClassSVM`` (kernel "rbf");
        ``KernelRidge`` (kernel "rbf" or "laplacian"); ``GaussianProcessRegressor`` (with or
        without ``normalize_y``) and binary ``GaussianProcessClassifier`` with kernels built
        from ``ConstantKernel``, ``RBF`` (one or per-feature length scales) and
        ``WhiteKernel``; or a ``Pipeline`` of per-feature scalers ending in one of these.
        Explained outputs: ``decision_function`` for SVMs (one-vs-one decision values for
        multi-class SVMs, see Notes), ``predict`` for regressors, the latent mean for GP
        classification.
    value_function : {"baseline", "observational"}, default="baseline"
        How a removed feature enters the kernel: factor 1, or its background mean.
    background : array-like of shape (n_background, n_features), default=None
        Rows, in the model's input space, whose kernel means replace removed factors under
        ``value_function="observational"``. When None, the points the model stores are used
        (support vectors, ``X_fit_``, ``X_train_``), as the published code does; support
        vectors are not a sample of the data (they crowd near the decision boundary), so
        pass training rows when you have them. Ignored by the baseline value function.
    feature_names : list of str, default=None
        Defaults to the model's ``feature_names_in_`` or ``x0, x1, ...``.
    n_jobs : int, default=None
        Parallel tasks of the engine, on threads.
    tol : float, default=2**-53
        Bound on the quadrature error of each integral; ``tol=0`` uses the exact rule
        everywhere (see :func:`pkex_select.pair_contributions`).

    Attributes
    ----------
    n_features_in_ : int
    feature_names_ : list of str
    output_names_ : list of str

    Notes
    -----
    A multi-class ``SVC`` is a set of one-vs-one classifiers, each a kernel expansion; its
    'ovr' decision function aggregates their votes and clipped confidences, which is not a
    kernel expansion and has no exact removal game. The explanation therefore has one output
    per pair of classes whatever ``decision_function_shape`` is, matching
    ``decision_function`` with ``decision_function_shape="ovo"``.

    The explainer reads the model's kernel expansion once, when it is built. If the model
    is fitted again afterwards, ``explain``, ``coalition_value`` and ``model_output`` raise a
    ValueError instead of explaining the earlier fit: build a new explainer.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.svm import SVR
    >>> from pkex_select import ProductKernelExplainer
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(100, 4))
    >>> y = np.sin(X[:, 0]) + X[:, 1] ** 2
    >>> model = SVR(gamma=0.5).fit(X, y)
    >>> explanation = ProductKernelExplainer(model).explain(X[:3])
    >>> explanation.values.shape
    (3, 4)
    >>> bool(np.allclose(explanation.values.sum(axis=1) + explanation.base_values,
    ...                  model.predict(X[:3])))
    True
    """

    def __init__(
        self,
        model,
        *,
        value_function="baseline",
        background=None,
        feature_names=None,
        n_jobs=None,
        tol=DEFAULT_TOL,
    ):
        self.model = model
        self.n_jobs = n_jobs
        self.tol = tol
        if value_function not in ("baseline", "observational"):
            raise ValueError(
                f"value_function must be 'baseline' or 'observational', got {value_function!r}."
            )
        self.value_function = value_function
        self._expansion = read_model(model)
        self._fitted_state = fitted_state(model)
        self.n_features_in_ = self._expansion.points.shape[1]
        if feature_names is None:
            names = getattr(model, "feature_names_in_", None)
            default = [f"x{j}" for j in range(self.n_features_in_)]
            feature_names = names if names is not None else default
        feature_names = [str(name) for name in feature_names]
        if len(feature_names) != self.n_features_in_:
            raise ValueError(
                f"Got {len(feature_names)} feature names for {self.n_features_in_} features."
            )
        self.feature_names_ = feature_names
        self.output_names_ = list(self._expansion.output_names)
        self.background = background
        self._removed_factors = self._background_inputs = None
        if value_function == "observational":
            if background is None:
                inputs = self._expansion.points
            else:
                _, inputs = self._prepare(background, what="background")
            self._background_inputs = inputs
            self._removed_factors = self._kernel_means(inputs)

    def _check_model_unchanged(self):
        state = fitted_state(self.model)
        if len(state) != len(self._fitted_state) or any(
            now is not then for now, then in zip(state, self._fitted_state)
        ):
            raise ValueError(
                f"The {type(self.model).__name__} was fitted again after this explainer was "
                "built, and the explainer holds the kernel expansion of the earlier fit. Build "
                "a new ProductKernelExplainer(model) for the new fit."
            )

    def _prepare(self, X, what="X"):
        if what == "X":
            self._check_model_unchanged()
        X = from_arrow(X)
        columns = getattr(X, "columns", None)
        if columns is not None and [str(c) for c in columns] != self.feature_names_:
            raise ValueError(
                f"{what} has columns {list(columns)} but the model was fitted on "
                f"{self.feature_names_}; select and order the columns as in training."
            )
        data = check_array(
            X,
            accept_sparse=("csr", "csc", "coo"),
            dtype=np.float64,
            ensure_all_finite=False,
            ensure_min_features=1,
            input_name=what,
        )
        if not np.all(np.isfinite(data.data if issparse(data) else data)):
            raise ValueError(
                f"{what} contains NaN or infinity; a kernel model has no output there. Impute "
                "or drop those rows before explaining them."
            )
        if data.shape[1] != self.n_features_in_:
            raise ValueError(
                f"{what} has {data.shape[1]} features, but the model expects {self.n_features_in_}."
            )
        inputs = X if columns is not None else data
        for step in self._expansion.preprocess:
            inputs = step.transform(inputs)
        return as_dense(data), as_dense(inputs)

    def _kernel_means(self, background):
        """nu[i, j] = mean_b k_j(background_bj, X_ij) per expansion point i, terms stacked."""
        e = self._expansion
        rows = rows_per_task(background.shape[0], 8 * e.points.size)
        means = []
        for term in e.terms:
            total = np.zeros(e.points.shape)
            for start in range(0, background.shape[0], rows):
                batch = background[start : start + rows]
                total += factor_tensor(batch, e.points, term.kernel, term.gamma).sum(axis=0)
            means.append(total / background.shape[0])
        return np.concatenate(means) if means else np.ones((0, self.n_features_in_))

    def _pair_weights(self):
        """Pair weights (the training points once per kernel term, stacked) and v(empty)."""
        e = self._expansion
        weights = (
            np.concatenate([term.coef * e.weights for term in e.terms])
            if e.terms
            else (np.zeros((0, e.weights.shape[1])))
        )
        if self._removed_factors is None:
            return weights, e.offset + weights.sum(axis=0)
        return weights, e.offset + np.prod(self._removed_factors, axis=1) @ weights

    def _factor_batches(self, inputs):
        e = self._expansion
        n_pairs = e.points.shape[0] * len(e.terms)
        rows = rows_per_task(inputs.shape[0], 8 * n_pairs * self.n_features_in_)
        for start in range(0, inputs.shape[0], rows):
            batch = inputs[start : start + rows]
            Z = [factor_tensor(batch, e.points, term.kernel, term.gamma) for term in e.terms]
            if not Z:  # a model whose kernel is a constant: no pairs
                Z = [np.ones((batch.shape[0], 0, self.n_features_in_))]
            yield (
                slice(start, start + batch.shape[0]),
                Z[0] if len(Z) == 1 else (np.concatenate(Z, axis=1)),
            )

    def _shape_outputs(self, array):
        return array[..., 0] if len(self.output_names_) == 1 else array

    def explain(
        self,
        X: ArrayLike,
        index: str = "SV",
        max_order: int = 1,
        return_covariance: bool = False,
    ) -> Explanation:
        """Exact Shapley values (or interaction indices) of the model output for each row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        index : {"SV", "BV", "SII", "BII", "STII", "k-SII", "Moebius"}, default="SV"
            Shapley values by default; see :func:`pkex_select.interaction_values`.
        max_order : {1, 2}, default=1
            1 for "SV" and "BV"; 2 for the pairwise indices.
        return_covariance : bool, default=False
            For a Gaussian process under ``value_function="observational"``: also the exact
            posterior covariance of each row's Shapley values (``covariance`` and ``std``
            of the Explanation). Their mean is ``values``; the user guide's "Uncertainty of
            a GP explanation" has the derivation.

        Returns
        -------
        Explanation
            ``values`` of shape (n_samples, n_features), or (n_samples, n_features,
            n_features) for pairwise indices; a trailing outputs axis for multi-output models.
        """
        check_index(index, max_order)
        posterior = self._check_covariance(index) if return_covariance else None
        data, inputs = self._prepare(X)
        weights, empty_value = self._pair_weights()
        shape = (data.shape[0],) + (self.n_features_in_,) * max_order + (weights.shape[1],)
        base_values = np.broadcast_to(empty_value, (data.shape[0], weights.shape[1])).copy()
        covariance = None
        if posterior is not None:
            # One engine pass gives both: the values are the pair weights times the per-pair
            # contributions the covariance needs (the same values, to rounding).
            values, covariance = self._values_and_covariance(inputs, weights, posterior)
            covariance = covariance[..., None] * np.square(posterior.output_scales)
            covariance = self._shape_outputs(covariance)
        else:
            values = np.empty(shape)
            for rows, Z in self._factor_batches(inputs):
                if index == "SV" and self._removed_factors is not None:
                    # The expansion's removed factors and weights are each point's.
                    values[rows] = point_values(
                        Z, self._removed_factors, weights, n_jobs=self.n_jobs, tol=self.tol
                    )
                else:
                    values[rows] = interaction_values(
                        Z,
                        np.broadcast_to(weights, (Z.shape[0],) + weights.shape),
                        index=index,
                        max_order=max_order,
                        removed_factors=self._removed_factors,
                        n_jobs=self.n_jobs,
                        tol=self.tol,
                    )
        return Explanation(
            values=self._shape_outputs(values),
            base_values=self._shape_outputs(base_values),
            data=data,
            feature_names=list(self.feature_names_),
            output_names=list(self.output_names_),
            index=index,
            covariance=covariance,
        )

    def _check_covariance(self, index):
        """The model's posterior, where a covariance of Shapley values is defined."""
        posterior = _models.gp_posterior(self.model)
        if self.value_function != "observational":
            raise ValueError(
                "return_covariance needs value_function='observational': there a removed "
                "feature takes the background's values, so each coalition's value is an "
                "average of the random function f. The removal game (factor 1) changes the "
                "kernel, which is a property of the expansion, not of f. Build the explainer "
                "with value_function='observational' and a background."
            )
        if index != "SV":
            raise ValueError(
                f"return_covariance is for Shapley values (index='SV'); got {index!r}."
            )
        return posterior

    def _values_and_covariance(self, inputs, weights, posterior):
        """Shapley values (n_samples, n_features, n_outputs) and their posterior covariance
        before the outputs' scales (n_samples, n_features, n_features) of every row of
        ``inputs`` (see :mod:`pkex_select._gp_uncertainty`)."""
        e = self._expansion
        n_train, d = e.points.shape
        values = np.empty((inputs.shape[0], d, weights.shape[1]))
        covariance = np.empty((inputs.shape[0], d, d))
        coefs = np.array([term.coef for term in e.terms])
        pair_means = self._pair_means()
        for rows, Z in self._factor_batches(inputs):
            removed = np.broadcast_to(self._removed_factors, Z.shape)
            per_pair = pair_contributions(
                Z.reshape(-1, d), removed_factors=removed.reshape(-1, d), tol=self.tol
            ).reshape(Z.shape)
            values[rows] = np.einsum("pqj,qo->pjo", per_pair, weights)
            # Row i of G(x): training point i's game, its kernel terms added up.
            G = np.einsum("t,ptij->pij", coefs, per_pair.reshape(-1, len(e.terms), n_train, d))
            block = data_covariance(G, posterior.cholesky, posterior.left)
            for term, means in zip(e.terms, pair_means):
                own = self._background_factors(inputs[rows], term).mean(axis=1)
                block += term.coef * prior_covariance(own, means)
            covariance[rows] = block
        return values, covariance

    def _background_factors(self, rows, term):
        """Kernel factors between ``rows`` and every background row: (n_rows, n_bg, d)."""
        return factor_tensor(rows, self._background_inputs, term.kernel, term.gamma)

    def _pair_means(self):
        """nu_j = mean k_j(b_j, b'_j) over every pair of background rows, per kernel term."""
        background = self._background_inputs
        rows = rows_per_task(background.shape[0], 8 * background.size)
        means = []
        for term in self._expansion.terms:
            total = np.zeros(background.shape[1])
            for start in range(0, background.shape[0], rows):
                batch = self._background_factors(background[start : start + rows], term)
                total += batch.sum(axis=(0, 1))
            means.append(total / background.shape[0] ** 2)
        return means

    def coalition_value(self, X: ArrayLike, subsets) -> np.ndarray:
        """The value function ``v(S)``: the model output with features outside S removed.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        subsets : array-like of bool of shape (n_subsets, n_features), or a list of
            collections of feature indices or names.

        Returns
        -------
        ndarray of shape (n_samples, n_subsets) or (n_samples, n_subsets, n_outputs)
            ``v(all features)`` is the model output and ``v(empty)`` the base value.
        """
        masks = self._subset_masks(subsets)
        data, inputs = self._prepare(X)
        weights, _ = self._pair_weights()
        offset = self._expansion.offset
        removed = 1.0 if self._removed_factors is None else self._removed_factors
        out = np.empty((data.shape[0], masks.shape[0], weights.shape[1]))
        for rows, Z in self._factor_batches(inputs):
            for s, mask in enumerate(masks):
                out[rows, s] = np.prod(np.where(mask, Z, removed), axis=2) @ weights + offset
        return self._shape_outputs(out)

    def model_output(self, X: ArrayLike) -> np.ndarray:
        """The model output the explanations add up to (see the ``model`` parameter)."""
        self._prepare(X)
        return _models.model_output(self.model, from_arrow(X))

    def _subset_masks(self, subsets):
        if isinstance(subsets, np.ndarray) and subsets.dtype == bool:
            masks = np.atleast_2d(subsets)
        else:
            index = {name: j for j, name in enumerate(self.feature_names_)}
            masks = np.zeros((len(subsets), self.n_features_in_), dtype=bool)
            for s, subset in enumerate(subsets):
                for feature in subset:
                    j = index.get(feature, feature) if isinstance(feature, str) else feature
                    if not isinstance(j, (int, np.integer)) or not 0 <= j < self.n_features_in_:
                        raise ValueError(f"Unknown feature {feature!r} in subset {s}.")
                    masks[s, j] = True
        if masks.shape[1] != self.n_features_in_:
            raise ValueError(
                f"subsets must have {self.n_features_in_} columns, got {masks.shape[1]}."
            )
        return masks
