"""
Explaining an SVM and a Gaussian process
========================================

An RBF support-vector regressor and a Gaussian process with one length scale per feature are
fitted on the diabetes data that ships with scikit-learn.
:class:`pkex_select.ProductKernelExplainer` gives the exact Shapley values of each prediction:
removing a feature sets its kernel factor to 1, and the values of that game are computed
exactly for all ten features at once. They add up to the prediction, which this example
checks.
"""

# %%
# An SVR in a pipeline
# --------------------
# The explainer reads the pipeline's scaler, so the values are for the raw columns.
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVR

from pkex_select import ProductKernelExplainer, plotting

X, y = load_diabetes(return_X_y=True, as_frame=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
svr = make_pipeline(StandardScaler(), SVR(C=30.0, gamma=0.02)).fit(X_train, y_train)

start = time.perf_counter()
explanation = ProductKernelExplainer(svr).explain(X_test.iloc[:100])
seconds = time.perf_counter() - start
gap = explanation.values.sum(axis=1) + explanation.base_values - svr.predict(X_test.iloc[:100])
print(
    f"100 rows x {X.shape[1]} features against {svr[-1].support_vectors_.shape[0]} support "
    f"vectors in {seconds:.3f} s; largest efficiency gap {np.abs(gap).max():.1e}"
)

# %%
# Global importance, one prediction, every prediction
# ---------------------------------------------------
# The bar chart ranks features by how much their values vary from row to row
# (:func:`pkex_select.plotting.centred_importance`): under the removal game a feature's
# values share a constant offset, which ``mean |value|`` would rank instead. The waterfall
# builds one prediction from the base value; the beeswarm shows every row.
fig, axes = plt.subplots(1, 3, figsize=(16, 5))
plotting.bar(explanation, ax=axes[0])
plotting.waterfall(explanation, row=0, ax=axes[1])
plotting.beeswarm(explanation, ax=axes[2])
fig.tight_layout()

# %%
# With shap's plots
# -----------------
# :meth:`~pkex_select.Explanation.to_shap` hands shap the centred values by default: each
# feature's values minus their mean over the explained rows, with the mean prediction as base
# value, as shap's own explainers give. Both sets of values add up to each prediction, but
# shap's bar chart ranks ``mean |value|``, which on the exact values of the removal game
# (``centred=False``) mostly ranks each feature's constant offset.
import shap  # noqa: E402

fig, axes = plt.subplots(1, 2, figsize=(14, 4.5))
for ax, centred in zip(axes, (False, True)):
    shap.plots.bar(explanation.to_shap(centred=centred), ax=ax, show=False)
    ax.set_title(f"to_shap(centred={centred})")
fig.tight_layout()

# %%
# A Gaussian process with per-feature length scales
# -------------------------------------------------
# A constant times an RBF kernel with one length scale per feature, plus noise, is a product
# over features too. With ``value_function="observational"`` a removed feature's kernel
# factor becomes its mean over background rows (here the training data), as in the
# published authors' current code.
kernel = ConstantKernel() * RBF(length_scale=np.ones(X.shape[1])) + WhiteKernel()
gp = make_pipeline(
    StandardScaler(), GaussianProcessRegressor(kernel, normalize_y=True, random_state=0)
)
with warnings.catch_warnings():
    # A length scale at its upper bound is the GP saying that feature does not matter.
    warnings.simplefilter("ignore", ConvergenceWarning)
    gp.fit(X_train, y_train)
observational = ProductKernelExplainer(
    gp, value_function="observational", background=X_train
).explain(X_test.iloc[:100])
print("mean value per feature (observational):", np.round(observational.values.mean(axis=0), 2))
plotting.beeswarm(observational)
plt.title("Gaussian process, observational value function")
plt.tight_layout()

# %%
# Which features act together
# ---------------------------
# Pairwise Shapley interaction indices (SII) of the same model, exact as well; the heat map
# shows the mean absolute interaction of each pair over the explained rows.
pairs = ProductKernelExplainer(gp).explain(X_test.iloc[:100], index="SII", max_order=2)
plotting.interactions(pairs)
plt.title("Gaussian process: mean |SII| per pair of features")
plt.tight_layout()
plt.show()
