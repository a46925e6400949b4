"""
An interaction that marginal filters miss
=========================================

The label is the sign of ``x5 * x9``: each feature alone says nothing about it, so any
method that scores one feature at a time (the F-test of
:class:`~sklearn.feature_selection.SelectKBest`, mutual information) ranks them at random. The
Shapley values of HSIC with a product kernel count a feature's share of every interaction it
takes part in, so both are found; the pairwise Shapley interaction index of the same game
(``interactions="SII"``) shows that they act together.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.feature_selection import f_classif, mutual_info_classif

from pkex_select import HSICShapleySelector

rng = np.random.default_rng(0)
X = rng.normal(size=(600, 20))
y = np.sign(X[:, 5] * X[:, 9])


def top_two(scores):
    return sorted(np.argsort(-scores)[:2].tolist())


selector = HSICShapleySelector(n_features_to_select=2, interactions="SII").fit(X, y)
print("HSIC Shapley values pick   ", selector.get_support(indices=True).tolist())
print("the F-test picks           ", top_two(f_classif(X, y)[0]))
print("mutual information picks   ", top_two(mutual_info_classif(X, y, random_state=0)))

# %%
# The values, and the interactions behind them
# --------------------------------------------
# Left: each feature's Shapley value of HSIC. Right: the pairwise interaction index; the
# diagonal (each feature's own value) is left blank.
pairwise = selector.interaction_values_.copy()
np.fill_diagonal(pairwise, np.nan)
fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
axes[0].bar(np.arange(20), selector.shapley_values_, color="#d62728")
axes[0].set_xlabel("feature")
axes[0].set_ylabel("Shapley value of HSIC")
image = axes[1].imshow(pairwise, cmap="Reds")
axes[1].set_xlabel("feature")
axes[1].set_ylabel("feature")
fig.colorbar(image, ax=axes[1], label="SII")
fig.tight_layout()
plt.show()
