"""Checks and encodings of user data shared by the HSIC and MMD entry points.

Labels become integer codes by value (``1`` and ``1.0`` are one label, strings and mixed
objects are fine, missing values are refused); targets are told apart as class labels or
continuous values by one documented rule; numeric columns are standardised without
overflow or underflow whatever their scale.
"""

import datetime
import decimal
import os
import sys
import warnings
from numbers import Real

import numpy as np
import pandas as pd

__all__ = [
    "holds_numbers",
    "categorical_dtypes",
    "check_no_missing",
    "column_names",
    "dates_as_days",
    "datetimes_as_days",
    "encode_labels",
    "from_arrow",
    "is_class_labels",
    "MAX_CLASSES",
    "MIN_SAMPLES_PER_CLASS",
    "outside_stacklevel",
    "RENAMED",
    "renamed_estimate",
    "standardise",
    "TargetTypeWarning",
]

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_JOBLIB = os.sep + "joblib" + os.sep


def outside_stacklevel():
    """The ``stacklevel`` for ``warnings.warn``, in the function that warns, that names the
    first caller outside this package and joblib's cache (which a fit may call through): a
    warning points at the user's line however deep in the fit it arises."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and (
        frame.f_code.co_filename.startswith(_PACKAGE) or _JOBLIB in frame.f_code.co_filename
    ):
        frame, level = frame.f_back, level + 1
    return level


# ``estimator`` named the estimate of HSIC or MMD until 0.2, where scikit-learn means a wrapped
# model; it is accepted, with a FutureWarning, until 0.3.
RENAMED = "deprecated"


def renamed_estimate(estimate, estimator=RENAMED, stacklevel=4):
    """The estimate asked for: ``estimate``, or the old ``estimator`` where it is given (with
    a FutureWarning that says how to write it now)."""
    if isinstance(estimator, str) and estimator == RENAMED:
        return estimate
    warnings.warn(
        f"estimator was renamed estimate in 0.2 (scikit-learn's estimator is a model); "
        f"estimator will be removed in 0.3. Use estimate={estimator!r}.",
        FutureWarning,
        stacklevel=stacklevel,
    )
    return estimator


# Integer-valued targets with at most this many distinct values are class labels ...
MAX_CLASSES = 20
# ... and so are those with fewer than this many samples per value on average.
MIN_SAMPLES_PER_CLASS = 2
# Between these counts of distinct integer values the guess is announced with a warning.
_BORDERLINE = (10, 40)


class TargetTypeWarning(UserWarning):
    """The target could be read as class labels or as a continuous quantity."""


def from_arrow(data):
    """A pyarrow Table or array as pandas (column types kept); any other input unchanged.

    scikit-learn reads pyarrow data itself, but the checks here read column names and
    dtypes, which pyarrow spells differently (``column_names``, ``schema``).
    """
    if type(data).__module__.split(".")[0] == "pyarrow" and hasattr(data, "to_pandas"):
        return data.to_pandas()
    return data


def dates_as_days(data):
    """A data frame's columns of times, exact numbers and nullable numbers as floats; any
    other input unchanged.

    Dates and datetimes become days since 1970-01-01, durations and periods days (a period
    by its start), decimals (what ``read_sql`` gives for NUMERIC) floats: they are
    quantities, not categories with a level per row, and NumPy finds no common type for
    them beside float columns. Columns of lists, arrays or records are refused by name:
    no kernel compares them.
    """
    if not hasattr(data, "columns"):
        return data
    if hasattr(data, "with_columns"):  # polars
        return _polars_as_numbers(data)
    converted = {}
    for position, column in enumerate(data.columns):  # by position: names may repeat
        values = data.iloc[:, position]
        if pd.api.types.is_datetime64_any_dtype(values):
            converted[position] = (values - pd.Timestamp(0, tz=values.dt.tz)) / pd.Timedelta(days=1)
        elif pd.api.types.is_timedelta64_dtype(values):
            converted[position] = values / pd.Timedelta(days=1)
        elif isinstance(values.dtype, pd.PeriodDtype):
            start = values.dt.start_time
            converted[position] = (start - pd.Timestamp(0)) / pd.Timedelta(days=1)
        elif _holds(values, decimal.Decimal) or str(values.dtype).startswith("decimal"):
            converted[position] = values.astype(float)  # object Decimals; pyarrow decimal128
        elif isinstance(values.dtype, pd.api.extensions.ExtensionDtype) and (
            pd.api.types.is_numeric_dtype(values.dtype)
        ):
            # Nullable and pyarrow numbers: beside a category column NumPy finds no common
            # type either, and scikit-learn's cast of the whole frame fails on the category.
            converted[position] = values.to_numpy(dtype=np.float64, na_value=np.nan)
        elif (
            _holds(values, (list, tuple, dict, np.ndarray))
            or "[pyarrow]" in str(values.dtype)
            and ("list" in str(values.dtype) or "struct" in str(values.dtype))
        ):
            raise _no_kernel_for(column)
    if not converted:
        return data
    data = data.copy()
    for position, values in converted.items():
        data.isetitem(position, values)
    return data


def _holds(values, kinds):
    """Whether an object column's present values are all of ``kinds``."""
    if values.dtype != object:
        return False
    present = values.dropna()
    return len(present) > 0 and all(isinstance(v, kinds) for v in present)


def _polars_as_numbers(data):
    import polars as pl

    columns = []
    for column, dtype in zip(data.columns, data.dtypes):
        if dtype in (pl.Date, pl.Datetime):
            columns.append((pl.col(column).dt.epoch("ms") / 86_400_000.0).alias(column))
        elif dtype == pl.Duration:
            columns.append((pl.col(column).dt.total_milliseconds() / 86_400_000.0).alias(column))
        elif dtype == pl.Decimal:
            columns.append(pl.col(column).cast(pl.Float64))
        elif dtype in (pl.List, pl.Array, pl.Struct, pl.Object):
            raise _no_kernel_for(column)
    return data.with_columns(columns) if columns else data


def _no_kernel_for(column):
    return ValueError(
        f"column {column!r} holds lists, arrays or records, which no kernel compares; "
        "expand it into columns of numbers or text, or drop it."
    )


_NANOSECONDS_PER_DAY = 86_400e9


def datetimes_as_days(values):
    """An array of datetimes (datetime64, or date and datetime objects) as days since
    1970-01-01, as :func:`dates_as_days` reads a frame's date columns; any other array
    unchanged. A datetime target is a continuous quantity, not labels."""
    if values.dtype.kind in "Mm":  # datetimes, and durations (a duration in days)
        unit = "datetime64[ns]" if values.dtype.kind == "M" else "timedelta64[ns]"
        return values.astype(unit).astype(np.int64) / _NANOSECONDS_PER_DAY
    if (
        values.dtype.kind == "O"
        and values.size
        and all(isinstance(v, (datetime.date, np.datetime64)) for v in values.ravel())
    ):
        days = pd.to_datetime(values.ravel()).asi8 / _NANOSECONDS_PER_DAY
        return np.asarray(days).reshape(values.shape)
    return values


def check_no_missing(values, what="y"):
    """Raise a ValueError naming ``what`` when an array of any dtype holds None or NaN."""
    missing = pd.isna(np.asarray(values, dtype=object))
    if np.any(missing):
        raise ValueError(
            f"{what} has missing values (None or NaN) in {int(missing.sum())} entries; drop "
            "those rows or fill the values in first."
        )


def encode_labels(values, what="y"):
    """Integer codes of the labels in ``values`` (1-D), and the labels in sorted order.

    Labels are compared by value, as Python's ``==`` does: ``1`` and ``1.0`` are the same
    label, ``"1"`` is another. Labels of mixed types that cannot be sorted keep the order
    in which they first appear.
    """
    check_no_missing(values, what)
    try:
        codes, labels = pd.factorize(np.asarray(values), sort=True)
    except TypeError:  # labels of types that do not compare, such as 1 and "a"
        codes, labels = pd.factorize(np.asarray(values), sort=False)
    return np.asarray(labels), codes


def _numeric_values(column):
    """The column as float64 when every entry is a real number (not bool), else None."""
    if column.dtype.kind in "iuf":
        return column.astype(np.float64)
    if column.dtype.kind == "O" and all(
        # Decimals are what read_sql gives for NUMERIC; numbers.Real does not include them.
        isinstance(v, (Real, decimal.Decimal)) and not isinstance(v, (bool, np.bool_))
        for v in column
    ):
        return column.astype(np.float64)
    return None


def is_class_labels(column, *, categorical_dtype=False):
    """Whether a target column holds class labels rather than a continuous quantity.

    The rule: text, booleans and categorical data are class labels; numbers with a
    fractional part are continuous. Integer-valued numbers are class labels when they take
    at most two values, or at most ``MAX_CLASSES`` (20) values with at least
    ``MIN_SAMPLES_PER_CLASS`` (2) samples per value on average; otherwise (months, counts,
    scores with many values) they are continuous. Between 11 and 40 distinct integer values
    the guess is borderline and a :class:`TargetTypeWarning` says which one was taken.
    """
    column = np.asarray(column)
    values = None if categorical_dtype else _numeric_values(column)
    if values is None or not np.all(values == np.round(values)):
        return values is None
    n_distinct = np.unique(values).size
    if n_distinct <= 2:
        return True
    classes = n_distinct <= min(MAX_CLASSES, column.size / MIN_SAMPLES_PER_CLASS)
    if _BORDERLINE[0] < n_distinct <= _BORDERLINE[1]:
        warnings.warn(
            f"y holds {n_distinct} distinct integer values in {column.size} samples; it is "
            f"treated as {'class labels' if classes else 'a continuous target'}. Set "
            f"target_kernel='{'rbf' if classes else 'delta'}' if it is "
            f"{'an ordered quantity' if classes else 'a set of class labels'}.",
            TargetTypeWarning,
            stacklevel=3,
        )
    return classes


def categorical_dtypes(data):
    """For a pandas object, whether each column (or the one series) has categorical dtype."""
    dtypes = list(data.dtypes) if isinstance(data, pd.DataFrame) else [getattr(data, "dtype", None)]
    return [isinstance(dtype, pd.CategoricalDtype) for dtype in dtypes]


# The largest temporary the standard deviations of standardise take at once.
_STD_BLOCK_BYTES = 2**23


def standardise(columns, in_place=False):
    """Columns scaled to zero mean and unit variance, and a mask of the constant ones.

    Each column is first divided by the power of two nearest its largest magnitude (an
    exact operation), so that neither the mean nor the sum of squares can overflow or
    underflow: the result is the same for data scaled by 1e-300 or 1e300. Constant
    columns are left at zero. ``in_place``: ``columns`` (float64) is the caller's own
    copy, and is scaled in it.
    """
    columns = np.asarray(columns, dtype=np.float64)
    constant = np.all(columns == columns[:1], axis=0)
    # The largest magnitude without a temporary of |columns| (as large as the data).
    largest = np.maximum(
        np.max(columns, axis=0, initial=0.0), -np.min(columns, axis=0, initial=0.0)
    )
    exponent = np.frexp(largest)[1]
    scaled = np.ldexp(columns, -exponent, out=columns if in_place else None)
    scaled -= scaled.mean(axis=0)
    # In Fortran order a few columns at a time: the deviations' temporary stays small where
    # the whole one would be as large as the data (its first writes took 0.18 s at 10^6 x
    # 20), and each column's (pairwise) sum is the one over all columns at once; in C order
    # NumPy sums a strided block otherwise, so there all at once.
    step = scaled.shape[1]
    if scaled.flags.f_contiguous:
        step = max(1, _STD_BLOCK_BYTES // (8 * max(1, scaled.shape[0])))
    std = np.concatenate(
        [scaled[:, j : j + step].std(axis=0) for j in range(0, scaled.shape[1], step)]
        or [np.zeros(0)]
    )
    scaled /= np.where(constant | (std == 0), 1.0, std)
    scaled[:, constant] = 0.0
    return scaled, constant


def column_names(estimator, mask):
    """The names (or indices) of an estimator's columns in ``mask``, for messages."""
    names = getattr(estimator, "feature_names_in_", None)
    columns = names[mask] if names is not None else np.flatnonzero(mask)
    return ", ".join(map(str, columns))


def holds_numbers(dtype):
    """Whether a column dtype of pandas or polars holds numbers (booleans count, as in
    pandas, so that a frame's columns get the same kernels in both)."""
    is_numeric = getattr(dtype, "is_numeric", None)  # polars dtypes know it themselves
    if callable(is_numeric):
        return bool(is_numeric()) or str(dtype) == "Boolean"
    return pd.api.types.is_numeric_dtype(dtype)
