"""Exact Shapley values for product-kernel methods, and feature selection built on them."""

from ._engine import pair_contributions, shapley_values
from ._features import IdentifierColumnWarning
from ._interactions import interaction_values
from ._pairgame import Attribution
from ._pvalues import PermutationTests
from ._validation import TargetTypeWarning
from .explain import Explanation, ProductKernelExplainer
from .hsic import HSICShapleySelector, hsic_shapley_values
from .mmd import MMDShapleyAttributor, attribute_shift, mmd_shapley_values

__all__ = [
    "Attribution",
    "Explanation",
    "HSICShapleySelector",
    "IdentifierColumnWarning",
    "MMDShapleyAttributor",
    "PermutationTests",
    "ProductKernelExplainer",
    "TargetTypeWarning",
    "attribute_shift",
    "hsic_shapley_values",
    "interaction_values",
    "mmd_shapley_values",
    "pair_contributions",
    "shapley_values",
]
__version__ = "0.2.0.dev0"
