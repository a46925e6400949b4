"""Exact Shapley values for product-kernel methods, and feature selection built on them."""

import importlib

# Each public name and the module that defines it. They are imported on first use, so that
# the command line starts (and answers Ctrl-C) before NumPy, numba and scikit-learn load.
_PUBLIC = {
    "Attribution": "._pairgame",
    "Explanation": ".explain",
    "HSICShapleySelector": ".hsic",
    "IdentifierColumnWarning": "._features",
    "MMDShapleyAttributor": ".mmd",
    "PermutationTests": "._pvalues",
    "ProductKernelExplainer": ".explain",
    "TargetTypeWarning": "._validation",
    "attribute_shift": ".mmd",
    "hsic_shapley_values": ".hsic",
    "interaction_values": "._interactions",
    "mmd_shapley_values": ".mmd",
    "pair_contributions": "._engine",
    "shapley_values": "._engine",
}
__all__ = sorted(_PUBLIC)
__version__ = "0.2.0.dev0"


def __getattr__(name):
    if name not in _PUBLIC:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_PUBLIC[name], __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted([*globals(), *_PUBLIC])
