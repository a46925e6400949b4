"""Reading a user's table for the command line: CSV, TSV or Parquet, compressed or not.

Text is kept as text; numbers written as percentages, money, dates and durations are read as
numbers; the encoding and the separator are found from the file where not given. Problems
are :class:`UsageError`, which the command line reports without a traceback; what was
changed in reading is said on stderr (:func:`note`).
"""

import importlib
import sys
import warnings
from collections import Counter
from functools import partial
from pathlib import Path

__all__ = ["UsageError", "load_table", "note"]

# Read as missing in numeric columns only: in a text column "NA" may be North America.
_NA_STRINGS = {
    "",
    "#N/A",
    "#N/A N/A",
    "#NA",
    "-1.#IND",
    "-1.#QNAN",
    "-NaN",
    "-nan",
    "1.#IND",
    "1.#QNAN",
    "<NA>",
    "N/A",
    "NA",
    "NULL",
    "NaN",
    "None",
    "n/a",
    "nan",
    "null",
}


class UsageError(Exception):
    """A problem with the user's input, reported without a traceback."""


def note(message):
    print(f"pkex-select: note: {message}", file=sys.stderr)


# The compressions pandas infers from a file's suffix and reads itself.
_COMPRESSED = {".gz": "gzip", ".bz2": "bz2", ".xz": "lzma", ".zip": "zip"}


def _data_suffix(path):
    """The suffix that names the format, under any compression's: ".tsv" for t.tsv.gz."""
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] in _COMPRESSED:
        suffixes.pop()
    return suffixes[-1] if suffixes else ""


def _open_bytes(path):
    """The file's bytes, decompressed as pandas will read them (by the suffix)."""
    compression = _COMPRESSED.get(Path(path).suffix.lower())
    if compression is None:
        return open(path, "rb")
    if compression == "zip":
        import zipfile

        archive = zipfile.ZipFile(path)
        members = [name for name in archive.namelist() if not name.endswith("/")]
        if len(members) != 1:
            raise UsageError(
                f"cannot read {path!r}: a zip archive must hold exactly one file, this one "
                f"holds {len(members)}; extract the one to rank"
            )
        return archive.open(members[0])
    return importlib.import_module(compression).open(path, "rb")


def _text_encoding(path):
    """The encoding of a text file: UTF-16 or UTF-32 by their byte-order marks (Excel's
    "Unicode text"), UTF-8 (with or without its mark) where the file's head decodes as it,
    else Windows' Western code page (cp1252), else Latin-1, which decodes any bytes. A file
    with NUL bytes and no mark is not text."""
    import codecs

    with _open_bytes(path) as f:
        head = f.read(1 << 20)
    marks = [(codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32")]
    marks += [(codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16")]
    marked = next((name for mark, name in marks if head.startswith(mark)), None)
    if marked is None and b"\x00" in head:
        raise UsageError(
            f"cannot read {path!r}: it holds NUL bytes, so it is not a text file (a "
            "spreadsheet? save it as CSV)"
        )
    for encoding in [marked] if marked else ["utf-8-sig", "cp1252"]:
        try:
            # Incremental: the head may end inside a character.
            codecs.getincrementaldecoder(encoding)().decode(head, final=False)
            return encoding
        except UnicodeDecodeError:
            pass
    if marked:
        raise UsageError(f"cannot read {path!r}: it is not {marked} text")
    return "latin-1"


def _separator_and_header(path, sep=None, encoding="utf-8-sig"):
    """The separator of a delimited text file (``sep``, or by the suffix for .tsv, else
    sniffed among comma, semicolon, tab and | from its first lines) and its header row as
    written (pandas renames duplicates and empty names), from one read of the file's head."""
    import csv
    import io

    with io.TextIOWrapper(_open_bytes(path), encoding=encoding, newline="") as f:
        first_line = f.readline()  # whole, however many columns it names
        sample = first_line + f.read(65536)
    if sep is None and _data_suffix(path) == ".tsv":
        sep = "\t"
    if sep is None:
        try:
            sep = csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
        except csv.Error:
            sep = ","
    return sep, next(csv.reader(io.StringIO(first_line), delimiter=sep), [])


# Numbers, percentages and amounts of money as text: a number with thousands separated or
# not, its decimal mark "." ("," in a ;-separated file, whose thousands separator is then
# "."), and a percent sign after it or a currency sign before it.
_NUMBER = r"[-+]?\s*(\d{1,3}(<T>\d{3})+|\d+)(<D>\d*)?"
_CURRENCY = "$€£¥"
_GROUPED = rf"^\s*{_NUMBER}\s*$"
_PERCENT = rf"^\s*{_NUMBER}\s*%\s*$"
_MONEY = rf"^\s*[-+]?\s*[{_CURRENCY}]\s*{_NUMBER}\s*$"


def _numbers_in(present, pattern, decimal):
    """The cells ``present`` as numbers where every one matches ``pattern``, else None."""
    import pandas as pd

    thousands = "." if decimal == "," else ","
    pattern = pattern.replace("<T>", "\\" + thousands).replace("<D>", "\\" + decimal)
    if not len(present) or not present.str.match(pattern).all():
        return None
    digits = present.str.replace(rf"[\s%{_CURRENCY}]", "", regex=True)
    digits = digits.str.replace(thousands, "", regex=False).str.replace(decimal, ".", regex=False)
    return pd.to_numeric(digits)


# A number in a file whose decimal mark is ",": thousands grouped by "." or not ("4.253,5",
# "4253,5"), and a decimal comma alone.
_COMMA_NUMBER = r"^\s*[-+]?(\d{1,3}(\.\d{3})+|\d+)(,\d*)?\s*$"
_DECIMAL_COMMA = r"^\s*[-+]?(\d{1,3}(\.\d{3})+|\d+),\d+\s*$"


def _dots_as_thousands(frame, read):
    """``frame`` (read with decimal mark ",") with the columns whose numbers group their
    thousands with "." ("4.253", "1.234,5") read as such; ``read(**options)`` reads the
    file again.

    pandas takes such a "." for a decimal point (4.253 for 4253, so that a column of numbers
    above and below 1000 silently mixes scales) and reads "1.234,5" as text. A column is
    read with "." grouping where every cell is a number by :data:`_COMMA_NUMBER`, one has a
    "." and the file writes decimals with "," (some cell of the columns read has a decimal
    comma); without that, "0.125" could be a decimal point, and the column stays as read."""
    import pandas as pd

    candidates = [
        column
        for column in frame.columns
        if pd.api.types.is_float_dtype(frame[column])
        or pd.api.types.is_object_dtype(frame[column])
        or pd.api.types.is_string_dtype(frame[column])
    ]
    if not candidates:
        return frame
    text = read(dtype=str, usecols=candidates)
    present = {column: text[column].dropna().astype(str) for column in candidates}
    if not any(cells.str.match(_DECIMAL_COMMA).any() for cells in present.values()):
        return frame
    for column, cells in present.items():
        dotted = cells.str.contains(".", regex=False)
        numbers = _numbers_in(cells, _COMMA_NUMBER, ",") if dotted.any() else None
        if numbers is None:
            continue
        frame[column] = numbers.reindex(text.index)
        note(
            f"column {column!r} read with '.' grouping its thousands ({cells[dotted].iloc[0]!r}"
            " is a number of four or more digits), as the file's decimal mark is ','"
        )
    return frame


# A text column with at least this share of numbers gets a note naming the other cells.
_MOSTLY_NUMERIC = 0.9


def _read_table(path, na_values, sep=None, encoding=None):
    """The file as a frame with text kept as text: the usual NA strings are missing values
    only in columns that are otherwise numeric; ``na_values`` are missing everywhere.
    Parquet files by their suffix; delimited text otherwise (see
    :func:`_separator_and_header`), in ``encoding`` or the one :func:`_text_encoding` finds."""
    import pandas as pd

    from ._validation import dates_as_days

    if _data_suffix(path) in (".parquet", ".pq"):
        try:
            frame = pd.read_parquet(path)
        except ImportError:
            raise UsageError("reading Parquet needs pyarrow: pip install pyarrow") from None
        return dates_as_days(frame)
    if encoding is None:
        encoding = _text_encoding(path)
        if encoding in ("cp1252", "latin-1"):
            note(
                f"{path} is not UTF-8; read as {encoding} (Western European). If its names "
                "look wrong, give its encoding: --encoding cp1251 (Cyrillic), shift_jis, gbk, "
                "iso-8859-2, ..."
            )
    sep, header = _separator_and_header(path, sep, encoding)
    counts = Counter(header)
    duplicated = sorted(name for name, count in counts.items() if count > 1 and name)
    if duplicated:
        raise UsageError(
            f"{path} has more than one column named {', '.join(map(repr, duplicated))}; "
            "give every column a name of its own"
        )
    missing = [""] + ([] if na_values is None else na_values.split(","))
    decimal = "," if sep == ";" else "."
    read = partial(
        pd.read_csv, path, sep=sep, keep_default_na=False, na_values=missing, encoding=encoding
    )
    frame = read(decimal=decimal)
    if decimal == ",":
        frame = _dots_as_thousands(frame, read)
    if header and header[0] == "" and frame.columns[0].startswith("Unnamed"):
        # A saved pandas index: a row number, not a feature.
        note("dropped the first column, which has no name (a saved row index)")
        frame = frame.iloc[:, 1:]
    for column in frame.columns:
        if pd.api.types.is_object_dtype(frame[column]) or pd.api.types.is_string_dtype(
            frame[column]
        ):
            text = frame[column].where(~frame[column].isin(_NA_STRINGS))
            numbers = pd.to_numeric(text, errors="coerce")
            if numbers.notna().sum() == text.notna().sum() and numbers.notna().any():
                frame[column] = numbers
                continue
            present = text.dropna().astype(str)
            percents = _numbers_in(present, _PERCENT, decimal)
            if percents is not None:
                frame[column] = percents.reindex(text.index)
                note(f"column {column!r} read as numbers (percent signs dropped)")
                continue
            grouped = _numbers_in(present, _GROUPED, decimal)
            if grouped is not None:  # not numbers to pandas: some cell groups its thousands
                frame[column] = grouped.reindex(text.index)
                note(f"column {column!r} read as numbers (thousands separators dropped)")
                continue
            amounts = _numbers_in(present, _MONEY, decimal)
            if amounts is not None:
                frame[column] = amounts.reindex(text.index)
                note(
                    f"column {column!r} read as numbers (currency signs and thousands "
                    "separators dropped)"
                )
                continue
            # Dates are times, not categories: as text every row would be a level of its own.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # pandas on strings it cannot parse
                dates = pd.to_datetime(text, format="ISO8601", errors="coerce", utc=True)
            if dates.notna().sum() == text.notna().sum() and dates.notna().any():
                frame[column] = dates
                note(f"column {column!r} read as dates, in days since 1970-01-01")
                continue
            durations = _durations(text, present)
            if durations is not None:
                frame[column] = durations
                note(f"column {column!r} read as durations, in days")
            elif numbers.notna().any() and (
                numbers.notna().sum() >= _MOSTLY_NUMERIC * text.notna().sum()
            ):
                # A stray word in a column of numbers makes every number a label of its own.
                stray = text[text.notna() & numbers.isna()].astype(str)
                note(
                    f"column {column!r} is numeric except in {len(stray)} "
                    f"row{'s' if len(stray) > 1 else ''} (such as "
                    f"{stray.iloc[0]!r} in row {stray.index[0] + 2} of the file), so it is "
                    "read as text labels; correct those cells, or give them as missing with "
                    f"--na-values {stray.iloc[0]}"
                )
    return dates_as_days(frame)


def _durations(text, present):
    """A text column of durations (``1 days 02:00:00``, ``00:05:00``, ISO 8601 ``P1DT2H``)
    as pandas timedeltas, or None where some of its ``present`` cells is not one."""
    import pandas as pd

    # Every cell names a unit or a clock time; plain numbers were read as numbers already.
    if not len(present) or not present.str.contains(r"[:a-zA-Z]").all():
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        durations = pd.to_timedelta(text, errors="coerce")
    return durations if durations.notna().sum() == len(present) else None


def load_table(path, target, task, na_values=None, sep=None, missing="error", encoding=None):
    """The features and target of the table at ``path`` (see the module's docstring)."""
    import numpy as np
    import pandas as pd
    from pandas.api.types import is_numeric_dtype

    try:
        frame = _read_table(path, na_values, sep, encoding)
    except FileNotFoundError:
        raise UsageError(f"cannot read {path!r}: no such file") from None
    except UnicodeDecodeError as error:
        # The error's byte offset counts from the start of the chunk pandas was decoding,
        # not of the file: it is left out.
        raise UsageError(
            f"cannot read {path!r} as {error.encoding}: part of it is not {error.encoding} "
            "text; give the file's encoding with --encoding"
            + (" (or leave it out to have it found)" if encoding else "")
        ) from None
    except pd.errors.EmptyDataError:
        raise UsageError(f"cannot read {path!r}: it is empty (not even a header row)") from None
    except (OSError, pd.errors.ParserError) as error:
        raise UsageError(f"cannot read {path!r}: {error}") from None
    if target not in frame.columns:
        near = [c for c in frame.columns if str(c).strip() == target.strip()]
        hint = f"; did you mean {near[0]!r}, with its spaces?" if near else ""
        raise UsageError(
            f"no column {target!r} in {path}; the columns are: "
            f"{', '.join(map(repr, map(str, frame.columns)))}{hint}"
        )
    missing_target = int(frame[target].isna().sum())
    if missing_target:
        note(f"dropped {missing_target} of {len(frame)} rows whose target {target!r} is missing")
        frame = frame.dropna(subset=[target])
    y = frame[target]
    X = frame.drop(columns=[target])
    if X.shape[1] == 0:
        raise UsageError(f"{path} has no feature columns besides the target {target!r}")
    X = _handle_missing(X, missing)
    y = y.loc[X.index]
    numeric = X.select_dtypes("number")
    infinite = numeric.columns[np.isinf(numeric.to_numpy(dtype=float)).any(axis=0)].tolist()
    if infinite:
        raise UsageError(
            f"infinite values in {', '.join(map(repr, map(str, infinite)))}; replace or drop "
            "those rows first"
        )
    if y.nunique() < 2:
        if len(y) == 0:
            raise UsageError(f"the target {target!r} has no values")
        raise UsageError(
            f"the target {target!r} is constant ('{y.iloc[0]}' in every row); "
            "there is no dependence to rank features by"
        )
    if task == "regression" and not is_numeric_dtype(y):
        raise UsageError(f"--task regression needs a numeric target; {target!r} is not")
    return X, y


def _handle_missing(X, missing):
    """X with its missing feature values refused, dropped or imputed (``--missing``)."""
    import pandas as pd

    empty = X.columns[X.isna().all()].tolist()
    if empty:
        # A column without a value tells nothing about y, whatever --missing says.
        if len(empty) == X.shape[1]:
            raise UsageError("every feature column is empty: there is nothing to rank")
        has = "which has" if len(empty) == 1 else "which have"
        note(f"dropped {', '.join(map(repr, map(str, empty)))}, {has} no values")
        X = X.drop(columns=empty)
    columns = X.columns[X.isna().any()].tolist()
    if not columns:
        return X
    named = ", ".join(map(repr, map(str, columns)))
    if missing == "error":
        raise UsageError(
            f"missing values in {named}; use --missing drop to drop those rows, or --missing "
            "impute to fill them (median; most frequent value for text)"
        )
    if missing == "drop":
        kept = X.dropna()
        if len(kept) < 2:
            raise UsageError(f"--missing drop leaves {len(kept)} rows; use --missing impute")
        note(f"dropped {len(X) - len(kept)} of {len(X)} rows with missing values in {named}")
        return kept
    X = X.copy()
    for column in columns:
        present = X[column].dropna()
        numeric = pd.api.types.is_numeric_dtype(X[column])
        X[column] = X[column].fillna(present.median() if numeric else present.mode().iloc[0])
    note(f"filled the missing values of {named} (median; most frequent value for text)")
    return X
