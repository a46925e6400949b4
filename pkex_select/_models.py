"""Read fitted scikit-learn kernel models into kernel expansions.

A model supported here predicts ``f(x) = sum_t sum_i W_t[i] k_t(X_i, x) + offset`` where each
``k_t`` is a product over features of one-dimensional factors (kernels.py). This module reads
those pieces from fitted attributes; nothing is refitted and no estimator is called.
"""

import copy
from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import issparse
from sklearn.base import is_classifier
from sklearn.gaussian_process import GaussianProcessClassifier, GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Product, Sum, WhiteKernel
from sklearn.kernel_ridge import KernelRidge
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, RobustScaler, StandardScaler
from sklearn.svm import SVC, SVR, NuSVC, NuSVR, OneClassSVM
from sklearn.utils.validation import check_is_fitted

__all__ = [
    "as_dense",
    "fitted_state",
    "GaussianPosterior",
    "gp_posterior",
    "KernelExpansion",
    "KernelTerm",
    "model_output",
    "read_model",
]

# Transformers that map each column on its own by an increasing affine map, so Shapley values
# of the transformed columns are the values of the raw columns.
PER_FEATURE_STEPS = (StandardScaler, MinMaxScaler, RobustScaler, MaxAbsScaler)
SUPPORTED = (
    "SVC, NuSVC, SVR, NuSVR, OneClassSVM (kernel='rbf'); KernelRidge (kernel='rbf' or "
    "'laplacian'); GaussianProcessRegressor and binary GaussianProcessClassifier with kernels "
    "built from ConstantKernel, RBF and WhiteKernel by + and *; a Pipeline of "
    "StandardScaler, MinMaxScaler, RobustScaler or MaxAbsScaler steps ending in one of these"
)


@dataclass
class KernelTerm:
    """One product kernel ``coef * prod_j k(x_j, x'_j; gamma_j)``; ``kernel=None`` is constant."""

    kernel: str | None
    gamma: np.ndarray | None
    coef: float = 1.0


@dataclass
class KernelExpansion:
    """``f(x) = sum_terms coef * sum_i weights[i] prod_j k(points[i, j], x_j) + offset``."""

    points: np.ndarray  # (n_points, n_features) in the model's input space
    weights: np.ndarray  # (n_points, n_outputs)
    terms: list
    offset: np.ndarray  # (n_outputs,)
    output_names: list
    preprocess: list = field(default_factory=list)  # fitted per-feature transformers


def as_dense(array):
    """A dense float array; models fitted on sparse X store their points and weights sparse."""
    if issparse(array):
        array = array.toarray()
    return np.asarray(array, dtype=np.float64)


def fitted_state(model):
    """The objects a fit stores on the model (and on each step of a pipeline).

    A refit replaces them, so comparing them by identity with those seen earlier tells
    whether the model was fitted again; holding them keeps their ids from being reused.
    """
    estimators = [step for _, step in model.steps] if isinstance(model, Pipeline) else [model]
    return tuple(
        value
        for estimator in estimators
        for name, value in sorted(vars(estimator).items())
        if name.endswith("_") and not name.startswith("__")
    )


def _not_product(model, what):
    return TypeError(
        f"{type(model).__name__} with {what} is not a product of one-dimensional kernels, so "
        "removing a feature has no exact kernel form. Supported: " + SUPPORTED + "."
    )


def read_model(model):
    """Return the :class:`KernelExpansion` of a fitted model (see ``SUPPORTED``)."""
    preprocess = []
    if isinstance(model, Pipeline):
        check_is_fitted(model)
        for name, step in model.steps[:-1]:
            if step in (None, "passthrough"):
                continue
            if not isinstance(step, PER_FEATURE_STEPS):
                raise TypeError(
                    f"Pipeline step {name!r} ({type(step).__name__}) does not transform each "
                    "feature on its own, so values for the raw columns are not defined. "
                    "Use StandardScaler, MinMaxScaler, RobustScaler or MaxAbsScaler, or explain "
                    "the final estimator on transformed data."
                )
            preprocess.append(step)
        model = model.steps[-1][1]
    expansion = _read_estimator(model)
    expansion.preprocess = preprocess
    return expansion


def _read_estimator(model):
    if isinstance(model, (SVC, NuSVC, SVR, NuSVR, OneClassSVM)):
        return _read_svm(model)
    if isinstance(model, KernelRidge):
        return _read_kernel_ridge(model)
    if isinstance(model, GaussianProcessRegressor):
        return _read_gpr(model)
    if isinstance(model, GaussianProcessClassifier):
        return _read_gpc(model)
    raise TypeError(f"{type(model).__name__} is not supported. Supported: {SUPPORTED}.")


def _read_svm(model):
    check_is_fitted(model, "support_vectors_")
    if model.kernel != "rbf":
        raise _not_product(model, f"kernel={model.kernel!r}")
    points = as_dense(model.support_vectors_)
    if points.size == 0:
        raise ValueError(f"{type(model).__name__} has no support vectors; nothing to explain.")
    term = KernelTerm("rbf", np.full(points.shape[1], float(model._gamma)))
    dual = as_dense(model.dual_coef_)
    if not is_classifier(model) or len(model.classes_) == 2:
        regressor = not (is_classifier(model) or isinstance(model, OneClassSVM))
        name = "predict" if regressor else "decision_function"
        return KernelExpansion(points, dual.T.copy(), [term], model.intercept_.copy(), [name])
    # One-vs-one: the classifier of classes (a, b) uses the support vectors of a with the
    # coefficients in row b - 1 and those of b with the coefficients in row a.
    classes = model.classes_
    bounds = np.concatenate([[0], np.cumsum(model.n_support_)])
    pairs = [(a, b) for a in range(len(classes)) for b in range(a + 1, len(classes))]
    weights = np.zeros((points.shape[0], len(pairs)))
    for k, (a, b) in enumerate(pairs):
        weights[bounds[a] : bounds[a + 1], k] = dual[b - 1, bounds[a] : bounds[a + 1]]
        weights[bounds[b] : bounds[b + 1], k] = dual[a, bounds[b] : bounds[b + 1]]
    names = [f"{classes[a]} vs {classes[b]}" for a, b in pairs]
    return KernelExpansion(points, weights, [term], model.intercept_.copy(), names)


def _output_names(n_outputs):
    return ["predict"] if n_outputs == 1 else [f"target {k}" for k in range(n_outputs)]


def _read_kernel_ridge(model):
    check_is_fitted(model, "dual_coef_")
    if callable(model.kernel) or model.kernel not in ("rbf", "laplacian"):
        raise _not_product(model, f"kernel={model.kernel!r}")
    points = as_dense(model.X_fit_)
    # KernelRidge ignores kernel_params for named kernels: gamma is model.gamma alone.
    gamma = model.gamma
    if gamma is None:  # sklearn.metrics.pairwise's default
        gamma = 1.0 / points.shape[1]
    weights = np.asarray(model.dual_coef_, dtype=np.float64)
    weights = weights.reshape(points.shape[0], -1)
    names = _output_names(weights.shape[1])
    term = KernelTerm(model.kernel, np.full(points.shape[1], float(gamma)))
    return KernelExpansion(points, weights, [term], np.zeros(weights.shape[1]), names)


def _gp_terms(model, kernel, n_features):
    """Expand a GP kernel into a sum of product terms (constant, RBF and white noise)."""
    if isinstance(kernel, Sum):
        return _gp_terms(model, kernel.k1, n_features) + _gp_terms(model, kernel.k2, n_features)
    if isinstance(kernel, Product):
        terms = []
        for left in _gp_terms(model, kernel.k1, n_features):
            for right in _gp_terms(model, kernel.k2, n_features):
                terms.append(_multiply(left, right))
        return terms
    if isinstance(kernel, ConstantKernel):
        return [KernelTerm(None, None, float(kernel.constant_value))]
    if isinstance(kernel, WhiteKernel):
        # Noise acts on identical inputs of the training set only; at prediction time
        # (k(X_train, x) with two different sets) it is zero.
        return [KernelTerm(None, None, 0.0)]
    if type(kernel) is RBF:  # not its subclass Matern, which is no product over features
        scale = np.broadcast_to(np.asarray(kernel.length_scale, dtype=np.float64), (n_features,))
        return [KernelTerm("rbf", 1.0 / (2.0 * scale**2))]
    raise _not_product(model, f"kernel {kernel!r}")


def _multiply(left, right):
    coef = left.coef * right.coef
    if left.kernel is None or right.kernel is None:
        other = right if left.kernel is None else left
        return KernelTerm(other.kernel, other.gamma, coef)
    # exp(-g1 d^2) * exp(-g2 d^2) = exp(-(g1 + g2) d^2): still one RBF factor per feature.
    return KernelTerm("rbf", left.gamma + right.gamma, coef)


def _expansion_from_terms(points, weights, terms, offset, names):
    product_terms = [t for t in terms if t.kernel is not None and t.coef != 0.0]
    constant = sum(t.coef for t in terms if t.kernel is None)
    offset = offset + constant * weights.sum(axis=0)
    return KernelExpansion(points, weights, product_terms, offset, names)


def _read_gpr(model):
    check_is_fitted(model, "alpha_")
    points = np.asarray(model.X_train_, dtype=np.float64)
    terms = _gp_terms(model, model.kernel_, points.shape[1])
    weights = np.asarray(model.alpha_, dtype=np.float64).reshape(points.shape[0], -1)
    # predict = std * K(x, X) alpha + mean (mean 0 and std 1 without normalize_y).
    std = np.broadcast_to(np.asarray(model._y_train_std, dtype=np.float64), (weights.shape[1],))
    mean = np.broadcast_to(np.asarray(model._y_train_mean, dtype=np.float64), (weights.shape[1],))
    names = _output_names(weights.shape[1])
    offset = np.zeros(weights.shape[1])
    expansion = _expansion_from_terms(points, weights * std, terms, offset, names)
    expansion.offset = expansion.offset + mean
    return expansion


def _read_gpc(model):
    check_is_fitted(model, "base_estimator_")
    if len(model.classes_) != 2:
        raise ValueError(
            "Only binary GaussianProcessClassifier is supported: the multi-class model is a "
            "set of one-vs-rest classifiers; explain each binary problem separately."
        )
    binary = model.base_estimator_
    points = np.asarray(binary.X_train_, dtype=np.float64)
    terms = _gp_terms(model, binary.kernel_, points.shape[1])
    # The latent mean at x is k(x, X_train) @ (y_train - pi) (Rasmussen & Williams, Alg. 3.2).
    weights = (binary.y_train_ - binary.pi_).reshape(-1, 1)
    return _expansion_from_terms(points, weights, terms, np.zeros(1), ["latent mean"])


@dataclass
class GaussianPosterior:
    """A GP's posterior covariance c(z, z') = s^2 (k(z, z') - k(z, X) A k(X, z')), with
    A = D L^-T L^-1 D: ``cholesky`` is L, ``left`` the diagonal of D (None: the identity) and
    ``output_scales`` the s of each output (normalize_y's standard deviations, else 1)."""

    cholesky: np.ndarray
    left: np.ndarray | None
    output_scales: np.ndarray


def gp_posterior(model):
    """The :class:`GaussianPosterior` of a fitted GaussianProcessRegressor or binary
    GaussianProcessClassifier (its latent function, Laplace approximation), or a TypeError
    for models that are one function, not a distribution over them."""
    estimator = model.steps[-1][1] if isinstance(model, Pipeline) else model
    if isinstance(estimator, GaussianProcessRegressor):
        # sklearn: cov = kernel_(x) - V^T V with V = L^-1 k(X, x), times std^2 per output.
        scales = np.atleast_1d(np.asarray(estimator._y_train_std, dtype=np.float64))
        n_outputs = np.asarray(estimator.alpha_).reshape(len(estimator.X_train_), -1).shape[1]
        return GaussianPosterior(
            np.asarray(estimator.L_), None, np.broadcast_to(scales, (n_outputs,)).copy()
        )
    if isinstance(estimator, GaussianProcessClassifier):
        # Rasmussen & Williams, Algorithm 3.2: V = L^-1 (W^1/2 k(X, x)), B = I + W^1/2 K W^1/2.
        binary = estimator.base_estimator_
        return GaussianPosterior(np.asarray(binary.L_), np.asarray(binary.W_sr_), np.ones(1))
    raise TypeError(
        f"{type(estimator).__name__} is one fitted function, not a distribution over "
        "functions, so its Shapley values have no posterior covariance. Fit a "
        "GaussianProcessRegressor or a binary GaussianProcessClassifier for uncertainty."
    )


def model_output(model, X):
    """The output the explanation adds up to: decision values, predictions or latent mean."""
    estimator = model.steps[-1][1] if isinstance(model, Pipeline) else model
    if isinstance(model, Pipeline):
        X = model[:-1].transform(X)
    if isinstance(estimator, (SVC, NuSVC)) and len(estimator.classes_) > 2:
        # A shallow copy shares the fitted arrays; the user's model is left untouched, so
        # other threads using it see no change.
        one_vs_one = copy.copy(estimator)
        one_vs_one.decision_function_shape = "ovo"
        return one_vs_one.decision_function(X)
    if isinstance(estimator, (SVC, NuSVC, OneClassSVM)):
        return estimator.decision_function(X)
    if isinstance(estimator, GaussianProcessClassifier):
        binary = estimator.base_estimator_
        K = binary.kernel_(binary.X_train_, np.asarray(X, dtype=np.float64))
        return K.T @ (binary.y_train_ - binary.pi_)
    return estimator.predict(X)
