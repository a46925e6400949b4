"""scikit-learn's private helpers this package relies on, imported in one place.

Parameter validation (``Interval``, ``StrOptions``, ``HasMethods``, ``validate_params``) and
the output configuration of ``set_output`` are private in scikit-learn, but they are how its
own estimators validate parameters and honour ``set_output``. When they move, this module is
the one to change (tests/test_core.py checks that no other module imports them).
"""

from sklearn.utils._param_validation import HasMethods, Interval, StrOptions, validate_params
from sklearn.utils._set_output import _get_output_config as get_output_config

__all__ = ["HasMethods", "Interval", "StrOptions", "get_output_config", "validate_params"]
