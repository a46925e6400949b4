"""
Which attributions of a Gaussian process the data support
=========================================================

A Gaussian process does not give one function but a posterior over functions, so the
Shapley values of its prediction at a point are random too. Under the observational game (a
removed feature takes the values of a background sample, feature by feature) they are
Gaussian, and :class:`pkex_select.ProductKernelExplainer` computes their mean and exact
posterior covariance (``return_covariance=True``): no posterior draws.

A GP with one length scale per feature is fitted on scikit-learn's diabetes data; for one
patient, the attributions whose 95% interval excludes 0 are supported by the data, the
others are within the posterior's noise.
"""

# %%
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

from pkex_select import ProductKernelExplainer, plotting

X, y = load_diabetes(return_X_y=True, as_frame=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
kernel = ConstantKernel() * RBF(np.ones(X.shape[1])) + WhiteKernel()
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvergenceWarning)  # length scales of unused features
    gp = make_pipeline(
        StandardScaler(), GaussianProcessRegressor(kernel, normalize_y=True, random_state=0)
    ).fit(X_train, y_train)

explainer = ProductKernelExplainer(gp, value_function="observational", background=X_train)
explanation = explainer.explain(X_test.iloc[:20], return_covariance=True)

# %%
# The values add up to the posterior mean, and each has a posterior standard deviation.
patient = 0
supported = np.abs(explanation.values[patient]) > 1.96 * explanation.std[patient]
for name, value, std, ok in zip(
    explanation.feature_names, explanation.values[patient], explanation.std[patient], supported
):
    print(f"{name:>4}: {value:+8.2f} +- {1.96 * std:6.2f}  {'supported' if ok else 'within noise'}")

# %%
# The intervals, largest attribution first; hollow points are within noise.
plotting.intervals(explanation, row=patient)
plt.tight_layout()
plt.show()
