"""Exact Shapley values for product-kernel methods, and feature selection built on them."""

from ._engine import pair_contributions, shapley_values
from .explain import Explanation, ProductKernelExplainer

__all__ = ["Explanation", "ProductKernelExplainer", "pair_contributions", "shapley_values"]
__version__ = "0.1.0"
