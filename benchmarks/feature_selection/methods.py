"""Feature-selection methods and downstream models of the comparison, all seeded."""

import contextlib
import io
import types
import warnings

import numpy as np
from sklearn.ensemble import ExtraTreesClassifier, ExtraTreesRegressor
from sklearn.feature_selection import (
    f_classif,
    f_regression,
    mutual_info_classif,
    mutual_info_regression,
)
from sklearn.gaussian_process import GaussianProcessClassifier, GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
from sklearn.linear_model import LassoCV
from sklearn.model_selection import KFold, StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, SVR

from pkex_select import HSICShapleySelector

METHODS = (
    "pkex-default",
    "pkex",
    "pkex-anova",
    "pkex-obs",
    "hsiclasso",
    "mi",
    "lasso",
    "kbest",
    "trees",
)
MODELS = ("gp", "svm")


def select(method, X, y, task, k, seed, *, scale=True):
    """Indices of the k features ``method`` ranks highest on (X, y).

    With ``scale``, features are standardised first (the clean protocol); the HSIC Shapley
    selector standardises internally either way.
    """
    if scale:
        X = StandardScaler().fit_transform(X)
    classification = task == "classification"
    if method.startswith("pkex"):
        # pkex-default: the selector's defaults (the model+anova game for k features, the
        # estimator by data size); pkex: the paper's game on the exact estimate; pkex-anova:
        # the ANOVA game (the default's game for alpha=); pkex-obs: the observational value
        # function (a removed feature's Gram matrix replaced by its mean), the published
        # authors' current default.
        value_function = {
            "pkex-default": "auto",
            "pkex": "baseline",
            "pkex-anova": "anova",
            "pkex-obs": "observational",
        }[method]
        selector = HSICShapleySelector(
            n_features_to_select=k,
            value_function=value_function,
            estimate="biased" if method in ("pkex", "pkex-obs") else "auto",
            random_state=seed,  # the block estimator's partitions
        )
        return np.sort(selector.fit(X, y).get_support(indices=True))
    if method == "hsiclasso":
        return _hsic_lasso(X, y, classification, k)
    if method == "mi":
        score = (mutual_info_classif if classification else mutual_info_regression)(
            X, y, random_state=seed
        )
    elif method == "kbest":
        score = (f_classif if classification else f_regression)(X, y)[0]
        score = np.nan_to_num(score, nan=-np.inf)  # constant features score NaN
    elif method == "lasso":
        # LassoCV on the targets (class labels as 0/1), as in the published comparison.
        score = np.abs(LassoCV(random_state=seed, max_iter=10000).fit(X, y).coef_)
    elif method == "trees":
        forest = ExtraTreesClassifier if classification else ExtraTreesRegressor
        score = forest(n_estimators=300, random_state=seed, n_jobs=1).fit(X, y)
        score = score.feature_importances_
    else:
        raise ValueError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")
    return np.sort(np.argsort(-np.asarray(score), kind="stable")[:k])


def _hsic_lasso(X, y, classification, k):
    """pyHSICLasso with its published defaults (B = 20, M = 3).

    pyHSICLasso's least-angle regression catches ``np.linalg.linalg.LinAlgError`` when a
    system is singular; NumPy 2 no longer has ``np.linalg.linalg``, so that path raises an
    AttributeError instead of taking pyHSICLasso's fallback. Giving NumPy the alias back
    restores the published behaviour without touching pyHSICLasso's code.
    """
    from pyHSICLasso import HSICLasso

    if not hasattr(np.linalg, "linalg"):
        np.linalg.linalg = types.SimpleNamespace(LinAlgError=np.linalg.LinAlgError)
    lasso = HSICLasso()
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lasso.input(np.asarray(X, dtype=float), np.asarray(y, dtype=float))
        run = lasso.classification if classification else lasso.regression
        run(k, B=20, M=3, n_jobs=1)
    chosen = list(lasso.get_index())[:k]
    # The path can stop before k features are active; fill up by the HSIC scores of the rest.
    if len(chosen) < k:
        scores = np.asarray(lasso.Xty).ravel()
        rest = [j for j in np.argsort(-scores, kind="stable") if j not in chosen]
        chosen += rest[: k - len(chosen)]
    return np.sort(np.array(chosen, dtype=int))


def gaussian_process(task, seed, *, clean=True):
    """The published downstream model: a GP with a constant times RBF kernel.

    For regression under the clean protocol a white-noise term is added and the targets are
    normalised: without them the published GP cannot fit noisy targets and predicts their
    mean (R^2 about 0, MAPE 1 on centred targets, as in several published cells), which
    would make every selection look alike. Inputs are standardised in the pipeline.
    """
    kernel = ConstantKernel(1.0) * RBF(1.0)
    if task == "classification":
        model = GaussianProcessClassifier(kernel, random_state=seed)
    elif clean:
        model = GaussianProcessRegressor(
            kernel + WhiteKernel(0.1), normalize_y=True, random_state=seed
        )
    else:
        model = GaussianProcessRegressor(kernel, random_state=seed)
    return make_pipeline(StandardScaler(), model) if clean else model


def tuned_svm(X, y, task, seed, trials, inner_folds=5, max_rows=1000):
    """An RBF SVM whose C and gamma are tuned by Optuna (seeded TPE, inner CV).

    C in [1e-5, 1e5] and gamma in [1e-5, 1e3], log-uniform. The inner cross-validation uses at
    most ``max_rows`` training rows (a seeded subsample) to bound its cost; the final model is
    refitted on all training rows. Returns the fitted pipeline and the best parameters.
    """
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    classification = task == "classification"
    rng = np.random.default_rng(seed)
    rows = rng.permutation(len(y))[:max_rows] if len(y) > max_rows else np.arange(len(y))
    X_inner, y_inner = X[rows], y[rows]
    splitter = (StratifiedKFold if classification else KFold)(
        inner_folds, shuffle=True, random_state=seed
    )
    scoring = "accuracy" if classification else "neg_root_mean_squared_error"

    def make(C, gamma):
        svm = SVC(C=C, gamma=gamma) if classification else SVR(C=C, gamma=gamma)
        svm.set_params(max_iter=200_000)  # bounds the worst cases (huge C) during tuning
        return make_pipeline(StandardScaler(), svm)

    def objective(trial):
        C = trial.suggest_float("C", 1e-5, 1e5, log=True)
        gamma = trial.suggest_float("gamma", 1e-5, 1e3, log=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return cross_val_score(
                make(C, gamma), X_inner, y_inner, cv=splitter, scoring=scoring
            ).mean()

    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed))
    study.optimize(objective, n_trials=trials)
    best = study.best_params
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make(**best).fit(X, y), best
