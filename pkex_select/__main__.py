"""Command-line tool: rank features by their exact Shapley share of HSIC.

pkex-select                          # demo: the Wisconsin breast-cancer data
pkex-select rank FILE.csv --target COL [--task auto|classification|regression]
            [--k K | --alpha A | --fdr Q] [--estimator auto|biased|unbiased|block]
            [--permutations N]
            [--value-function auto|model+anova|model|anova|pairwise_anova|baseline|
                              observational]
            [--missing error|drop|impute] [--na-values LIST] [--sep CHAR] [--encoding NAME]
            [--plot out.png] [--json]
"""

import argparse
import json
import os
import sys
import unicodedata
import warnings
from pathlib import Path

from ._reading import UsageError, load_table, note

# NumPy, pandas and the estimators are imported where they are used, so that the command
# starts at once and answers Ctrl-C from the first moment (see main_entry).

_BAR_WIDTH = 30
# Fits show a progress bar on a terminal, and from this many samples on in logs too.
_VERBOSE_FROM = 3000
# The kernel on the target for each --task.
_TARGET_KERNELS = {"auto": "auto", "classification": "delta", "regression": "rbf"}
# The HSIC estimates --estimator names (the selector's estimate).
_ESTIMATES = ["auto", "biased", "unbiased", "block"]
_COMMON_DEFAULTS = {
    "k": None,
    "alpha": None,
    "fdr": None,
    "estimator": "auto",
    "permutations": None,
    "seed": 0,
    "value_function": None,
    "na_values": None,
    "sep": None,
    "encoding": None,
    "missing": "error",
    "plot": None,
    "json": False,
}
# With permutations and neither --k nor --alpha, features are selected at this level.
_DEFAULT_ALPHA = 0.05
# What a value means in each game, for the table's header.
_READING = {
    "anova": "Game: ANOVA (each feature's kernel centred). A value is the feature's share of "
    "the dependence, its\ninteractions included; a feature independent of y and of the "
    "others gets about 0 (small values of\neither sign are noise).",
    "pairwise_anova": "Game: ANOVA (each feature's kernel centred), its interactions of at "
    "most two features: a\nvalue is the feature's own share of the dependence plus half of "
    "each pairwise interaction it\nis in; a feature independent of y gets about 0, even where "
    "another such feature copies it (small\nvalues of either sign are noise).",
    "baseline": "Game: the paper's (PKeX-Shapley). Adding a feature narrows the joint kernel, "
    "so a feature that adds\nlittle beyond the others (a near-copy, a weak one beside a "
    "dominant one) gets a small or negative\nvalue: the largest values are the columns a "
    "model should use. To test which columns y depends on, use --alpha.",
    "model": "Game: the model's. A kernel ridge of the target on every column, at bandwidths "
    "aligned with it, is\nexplained row by row; a value is how far the column moves the fitted "
    "function on average (mean\nabsolute Shapley value, in standard deviations of the target or "
    "in class indicators). 0: the model\ndoes not use it. To test which columns y depends on, "
    "use --alpha.",
    "model+anova": "Game: the model's, with the ANOVA game's beside it. A kernel ridge of the "
    "target on every column, at\nbandwidths aligned with it, is explained row by row; a value "
    "is the column's share of the model's moves\n(mean absolute Shapley values) plus 0.3 times its "
    "share of the ANOVA game's dependence, over 1.3:\nthe columns the model uses keep their "
    "order, and a column y depends on ranks above unrelated ones\neven where the model does not "
    "use it (a copy of a column it uses, an even effect). A column the\nANOVA game does not "
    "back keeps a tenth of its model share, unless the model predicts clearly worse\nwithout "
    "it or it acts on the target together with another column; a numeric column\ncorrelated "
    "with another (r^2 >= 0.5) gets at least r^2 times its value, but not past a column\nthe "
    "ANOVA game backs (the values are scaled to add up to 1). To test which columns y\ndepends "
    "on, use --alpha.",
    "observational": "A removed feature's kernel becomes its mean, which keeps part of every "
    "feature in the empty coalition:\nthe values split what is left.",
}


def _count(minimum):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


def _separator(text):
    """One character; a shell's "\\t" (two characters) for a tab."""
    if text == "\\t":
        return "\t"
    if len(text) != 1 or text in '\n\r"':
        raise argparse.ArgumentTypeError(
            f"expected one character such as , ; | or \\t (tab), got {text!r}"
        )
    return text


def _encoding(text):
    """A codec Python knows, by any of its names."""
    import codecs

    try:
        name = codecs.lookup(text).name
    except LookupError:
        raise argparse.ArgumentTypeError(
            f"unknown encoding {text!r}; for example utf-8, cp1252, cp1251, shift_jis, gbk"
        ) from None
    return "utf-8-sig" if name == "utf-8" else name  # a byte-order mark is not a name


def _level(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {value:g}")
    return value


def _common_options():
    """Options that may stand before or after the command (``--k 2 rank f.csv`` too)."""
    common = argparse.ArgumentParser(add_help=False, argument_default=argparse.SUPPRESS)
    common.add_argument(
        "--k",
        type=_count(1),
        help="select the K columns a model should use: the K largest values of the model "
        "game, with the ANOVA game's beside it (default: test every column at --alpha 0.05 "
        "where that takes seconds, else the largest 20%%)",
    )
    common.add_argument(
        "--alpha",
        type=_level,
        metavar="A",
        help="select the features whose adjusted p-value is at most A (runs "
        "999 permutations unless --permutations says otherwise)",
    )
    common.add_argument(
        "--fdr",
        type=_level,
        metavar="Q",
        help="select by model-X knockoffs at false discovery rate Q: the columns that carry "
        "information about y the others do not (numeric columns; 0.2 where few are relevant)",
    )
    common.add_argument(
        "--estimator",
        choices=_ESTIMATES,
        help="HSIC estimate to attribute (default: auto, the exact biased "
        "estimate up to a few seconds of work, the block estimate beyond)",
    )
    common.add_argument(
        "--permutations",
        type=_count(0),
        metavar="N",
        help="permutations for p-values (default: none, or 999 with --alpha)",
    )
    common.add_argument(
        "--seed", type=_count(0), help="random seed of the permutations (default: 0)"
    )
    common.add_argument(
        "--value-function",
        choices=["auto", *sorted(_READING)],
        help="the game whose Shapley values are computed (default: auto, the pairwise ANOVA "
        "game when testing, the model game with the ANOVA game's beside it with --k)",
    )
    common.add_argument(
        "--sep",
        type=_separator,
        metavar="CHAR",
        help="the column separator (default: found from the file: comma, semicolon, tab "
        "or |; a semicolon file reads 1,5 as 1.5)",
    )
    common.add_argument(
        "--encoding",
        type=_encoding,
        metavar="NAME",
        help="the file's text encoding, such as cp1251, shift_jis or gbk (default: found from "
        "the file: UTF-8, UTF-16 or UTF-32, else Windows-1252, else Latin-1)",
    )
    common.add_argument(
        "--missing",
        choices=["error", "drop", "impute"],
        help="rows with a missing feature value: error (default) names the columns; drop "
        "drops those rows; impute fills numbers with the column's median and text with its "
        "most frequent value",
    )
    common.add_argument(
        "--na-values",
        metavar="LIST",
        help="comma-separated strings that mean a missing value in any column "
        "(default: empty cells; in numeric columns also NA, NaN, null, ...)",
    )
    common.add_argument(
        "--plot", metavar="FILE", help="save a bar chart of the values (.png, .pdf, .svg, ...)"
    )
    common.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return common


def _parser():
    common = _common_options()
    parser = argparse.ArgumentParser(
        prog="pkex-select",
        parents=[common],
        description="Rank features by their exact Shapley share of HSIC(X, y). Without a "
        "command, ranks the Wisconsin diagnostic breast-cancer data shipped with scikit-learn.",
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"pkex-select {__version__}")
    commands = parser.add_subparsers(dest="command")
    rank = commands.add_parser(
        "rank", parents=[common], help="rank the feature columns of a CSV file"
    )
    rank.add_argument("file", help="CSV (or .tsv, ;-separated, Parquet) file with a header row")
    rank.add_argument("--target", required=True, help="name of the target column")
    rank.add_argument(
        "--task",
        choices=list(_TARGET_KERNELS),
        default="auto",
        help="auto: classification for text, booleans and integers with at most "
        f"{_MAX_CLASSES} values (and {_MIN_SAMPLES_PER_CLASS} rows per value), else "
        "regression (the rule of target_kernel='auto')",
    )
    return parser


def _parse(argv):
    args = _parser().parse_args(argv)
    for name, default in _COMMON_DEFAULTS.items():
        if not hasattr(args, name):
            setattr(args, name, default)
    # The flags may stand before and after the command, so argparse cannot tell that they
    # exclude each other.
    given = [f"--{name}" for name in ("k", "alpha", "fdr") if getattr(args, name) is not None]
    if len(given) > 1:
        raise UsageError(
            f"give one of --k, --alpha and --fdr, not {' and '.join(given)}: --k selects a "
            "number of features, --alpha those whose adjusted p-value is at most alpha, --fdr "
            "those knockoffs select at that false discovery rate"
        )
    return args


# _validation's MAX_CLASSES and MIN_SAMPLES_PER_CLASS, restated for the help text without
# importing NumPy (tests/test_cli.py checks that they agree).
_MAX_CLASSES, _MIN_SAMPLES_PER_CLASS = 20, 2


def _demo_data():
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True)
    return data.data, data.target


def rank(
    X,
    y,
    *,
    k,
    estimator,
    permutations,
    seed,
    task="auto",
    value_function=None,
    alpha=None,
    fdr=None,
):
    """Fit the selector the command line describes; problems become :class:`UsageError`."""
    from . import HSICShapleySelector
    from ._questions import TooFewPermutationsWarning, tests_affordable
    from ._spelling import command_line
    from ._validation import TargetTypeWarning

    selector = HSICShapleySelector(
        n_features_to_select=k if k is not None else 0.2,
        estimate=estimator,
        target_kernel=_TARGET_KERNELS[task],
        n_permutations=permutations,
        alpha=alpha,
        fdr=fdr,
        random_state=seed,
        verbose=int(sys.stderr.isatty() or len(X) >= _VERBOSE_FROM),
    )
    if value_function is not None:
        selector.set_params(value_function=value_function)
    if k is None and alpha is None and fdr is None and permutations != 0:
        if permutations or tests_affordable(selector, *X.shape):
            selector.set_params(alpha=_DEFAULT_ALPHA)
    with warnings.catch_warnings(record=True) as caught, command_line(_SPELLING):
        # Our warnings become notes, under -W error too; too few permutations for --alpha
        # stop the run, which could select nothing.
        warnings.simplefilter("always", UserWarning)
        warnings.simplefilter("error", TooFewPermutationsWarning)
        try:
            selector.fit(X, y)
        except (ValueError, TooFewPermutationsWarning) as error:
            raise UsageError(str(error)) from None

    for warning in caught:  # the target's type in the CLI's own words; the others as they are
        if not issubclass(warning.category, TargetTypeWarning):
            note(str(warning.message))
    if any(issubclass(w.category, TargetTypeWarning) for w in caught):
        guess = _task(selector)
        other = "regression" if guess == "classification" else "classification"
        note(
            f"the target has {y.nunique()} distinct integer values and was treated as "
            f"{guess}; use --task {other} if it is not"
        )
    return selector


# The selector's parameters as the command line's flags (pkex_select._spelling), with the
# values that differ.
_SPELLING = {
    "value_function": ("--value-function", {}),
    "alpha": ("--alpha", {}),
    "fdr": ("--fdr", {}),
    "n_features_to_select": ("--k", {}),
    "n_permutations": ("--permutations", {}),
    "estimate": ("--estimator", {}),
    "target_kernel": ("--task", {"delta": "classification", "rbf": "regression"}),
}


def _task(selector):
    return "classification" if selector.target_kernel_ == "delta" else "regression"


def _rows(selector, names):
    import numpy as np

    support = selector.get_support()
    rows = []
    for j in np.argsort(selector.ranking_):
        row = {
            "rank": int(selector.ranking_[j]),
            "feature": str(names[j]),
            "shapley_value": float(selector.shapley_values_[j]),
            "share": float(selector.shares_[j]),
            "selected": bool(support[j]),
        }
        if hasattr(selector, "pvalues_"):
            row["pvalue"] = float(selector.pvalues_[j])
            row["adjusted_pvalue"] = float(selector.adjusted_pvalues_[j])
        rows.append(row)
    return rows


def _width(text):
    """Columns the text takes in a terminal: wide East Asian characters and emoji take two."""
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        for c in text
    )


def _print_table(rows, selector, title, out):
    width = max([7] + [_width(r["feature"]) for r in rows])
    largest = max(abs(r["shapley_value"]) for r in rows) or 1.0
    print(title, file=out)
    widths = (
        ""
        if len(selector.scales_) == 1
        else (f" (HSIC at {len(selector.scales_)} kernel widths, each divided by its spread)")
    )
    if selector.estimate_ == "block":
        print(
            f"Estimated from {selector.n_repetitions_} partitions into blocks of "
            f"{selector.block_size} rows (--estimator block; --estimator biased for the "
            "exact estimate over all pairs).",
            file=out,
        )
    parts = (
        "Each feature's value is its part of the model's moves (below), not of this"
        if selector.value_function_ == "model"
        else "Each feature's value is its share of the model's moves plus 0.3 times its share "
        "of the ANOVA game's, scaled to add up to 1 (below)"
        if selector.value_function_ == "model+anova"
        else "Each feature's value is its part of it; the values add up to it"
    )
    print(
        f"How strongly y depends on the features: {selector.hsic_:.6g}{widths}.\n{parts}, "
        "and share = value / (sum of |values|).",
        file=out,
    )
    if hasattr(selector, "pvalue_"):
        level = selector.alpha if selector.alpha is not None else _DEFAULT_ALPHA
        print(
            f"Independence test of X and y: p = {selector.pvalue_:.4g} "
            f"({selector.n_permutations_} permutations). Per-feature p-values are adjusted "
            f"for testing every feature\n(Westfall-Young maxT: the chance that any adjusted "
            f"p-value <= {level:g} under independence is <= {level:.0%}).",
            file=out,
        )
    print(_READING[selector.value_function_], file=out)
    if "pvalues_" in vars(selector):
        others = "one other" if selector.value_function_ == "pairwise_anova" else "others"
        print(
            f"A small p-value says y depends on the feature (alone or with {others}); a copy "
            "of a relevant feature\ngets one too: the test is marginal, not conditional.",
            file=out,
        )
    n_selected = sum(r["selected"] for r in rows)
    rule, hint = _selection_rule(selector)
    print(f"* = selected ({n_selected} of {len(rows)}): {rule} ({hint})", file=out)
    if selector.alpha is not None and n_selected == len(rows):
        print(
            "Every column is related to y at this level, as often on data with many rows; "
            "--k K picks the K a model should use.",
            file=out,
        )
    print(file=out)
    pcol = "pvalues_" in vars(selector)
    header = f"{'rank':>4}  {'feature'}{' ' * (width - 7)}  {'shapley':>11}  {'share':>6}"
    print(header + ("  p-value  adj. p" if pcol else ""), file=out)
    for r in rows:
        length = int(round(_BAR_WIDTH * abs(r["shapley_value"]) / largest))
        bar = ("#" if r["shapley_value"] >= 0 else "-") * length
        padding = " " * (width - _width(r["feature"]))
        line = (
            f"{r['rank']:>4}{'*' if r['selected'] else ' '} {r['feature']}{padding}  "
            f"{r['shapley_value']:>11.4g}  {r['share']:>6.1%}"
        )
        if pcol:
            line += f"  {r['pvalue']:>7.3f}  {r['adjusted_pvalue']:>6.3f}"
        print(f"{line}  {bar}", file=out)


def _selection_rule(selector):
    """What the stars mean, and a hint at the flags that change it."""
    if selector.fdr is not None:
        statistics = " and ".join(sorted(set(selector.knockoff_value_functions_)))
        return (
            f"knockoffs at false discovery rate {selector.fdr:g}, "
            + ("one draw" if selector.n_knockoffs == 1 else f"{selector.n_knockoffs} draws")
            + f" ({statistics} statistic)",
            "the columns that tell about y what the others do not; --fdr to change",
        )
    if selector.alpha is not None:
        return (
            f"adjusted p-value <= {selector.alpha:g}",
            "the columns y depends on; --alpha to change, --k for the K a model should use",
        )
    if isinstance(selector.n_features_to_select, int):
        k = min(selector.n_features_to_select, selector.n_features_in_)
        return f"the {k} largest values", "--k"
    if selector.n_permutations == 0:
        return "the largest 20% of the values", "--permutations 0 runs no tests; --k"
    if selector.estimate_ != "block":  # the default tests every column from 10 rows on
        return (
            "the largest 20% of the values",
            "fewer than 10 rows are too few for tests at 0.05: --k to choose how many",
        )
    return (
        "the largest 20% of the values",
        "testing every column takes long at this size: --alpha 0.05 to test anyway, --k "
        "to choose how many",
    )


def _plot_path(path):
    """Check a --plot path before any work is done; a path without extension gets .png."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib.figure import Figure
    except ImportError:
        raise UsageError("--plot needs matplotlib: pip install 'pkex-select[plot]'") from None
    path = Path(path)
    if path.is_dir():
        raise UsageError(
            f"--plot: {str(path)!r} is a folder; give a file name, for example "
            f"{str(path / 'ranking.png')!r}"
        )
    if not path.suffix:
        path = path.with_suffix(".png")
    formats = Figure().canvas.get_supported_filetypes()
    if path.suffix[1:].lower() not in formats:
        raise UsageError(
            f"--plot cannot write {path.suffix!r} files; use one of "
            f"{', '.join('.' + f for f in sorted(formats))}"
        )
    if not path.parent.is_dir():
        raise UsageError(f"--plot: the folder {str(path.parent)!r} does not exist")
    return path


def _plot(selector, names, path):
    import matplotlib.pyplot as plt

    from .plotting import ranking

    ax = ranking(selector, alpha=selector.alpha or _DEFAULT_ALPHA)
    ax.set_title("Exact Shapley values of HSIC(X, y)")
    ax.figure.tight_layout()
    try:
        ax.figure.savefig(path, dpi=120)
    except OSError as error:
        raise UsageError(f"--plot: cannot write {str(path)!r}: {error.strerror}") from None
    finally:
        plt.close(ax.figure)


class _LineEnds:
    """A text stream that remembers whether what was written last ended its line.

    The CLI writes stderr through it, so that a message after an interruption starts on a
    line of its own whatever a progress bar had drawn when the signal came (a bar
    interrupted inside its own drawing code can be left without its closing newline).
    """

    def __init__(self, stream):
        self.stream, self.at_line_start = stream, True

    def write(self, text):
        if text:
            self.at_line_start = text.endswith("\n")
        return self.stream.write(text)

    def __getattr__(self, name):
        return getattr(self.stream, name)


def main(argv=None):
    stderr = sys.stderr
    sys.stderr = _LineEnds(stderr)
    try:
        return _main(argv)
    finally:
        sys.stderr = stderr


def _interrupted():
    _discard_stdout()
    fresh_line = "" if getattr(sys.stderr, "at_line_start", True) else "\n"
    print(f"{fresh_line}pkex-select: interrupted", file=sys.stderr)
    return 130


def _import_the_library():
    """Import NumPy, pandas, scikit-learn and the estimators, and find the thread pools the
    fit limits, with Ctrl-C held back until they are done: NumPy turns an interrupt inside
    its compiled modules into an ImportError (and a traceback), and threadpoolctl's walk of
    the loaded libraries loses one. A Ctrl-C pressed meanwhile then ends the command as
    usual."""
    import signal

    block = getattr(signal, "pthread_sigmask", None)  # POSIX only
    if block is not None:
        block(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        import pandas  # noqa: F401  (NumPy with it)

        from . import HSICShapleySelector  # noqa: F401  (scikit-learn and numba with it)
        from ._scheduling import blas_controller

        blas_controller()  # the fit's thread limits, found once
    finally:
        if block is not None:
            block(signal.SIG_UNBLOCK, {signal.SIGINT})


def _main(argv):
    try:
        args = _parse(argv)
        _import_the_library()
        plot_path = _plot_path(args.plot) if args.plot else None
        if args.command == "rank":
            X, y = load_table(
                args.file,
                args.target,
                args.task,
                args.na_values,
                args.sep,
                args.missing,
                args.encoding,
            )
            describe = (
                f"{args.file}: {X.shape[0]} rows, {X.shape[1]} "
                f"feature{'s' if X.shape[1] != 1 else ''}, target {args.target!r}"
            )
        else:
            X, y = _demo_data()
            describe = (
                "Wisconsin diagnostic breast cancer (scikit-learn's load_breast_cancer): "
                f"{X.shape[0]} rows, {X.shape[1]} features, target malignant/benign"
            )
        selector = rank(
            X,
            y,
            k=args.k,
            estimator=args.estimator,
            permutations=args.permutations,
            seed=args.seed,
            task=getattr(args, "task", "auto"),
            value_function=args.value_function,
            alpha=args.alpha,
            fdr=args.fdr,
        )
        rows = _rows(selector, X.columns)
        task = _task(selector)
        if args.json:
            report = {
                "hsic": selector.hsic_,
                "task": task,
                "estimator": selector.estimate_,
                "selection": _selection_rule(selector)[0],
                "game": selector.value_function_,
                "features": rows,
            }
            if hasattr(selector, "pvalue_"):
                report["pvalue"] = selector.pvalue_
            print(json.dumps(report, indent=2, ensure_ascii=False))
        else:
            _print_table(rows, selector, f"{describe} ({task})", sys.stdout)
        if plot_path is not None:
            _plot(selector, X.columns, plot_path)
            print(f"\nSaved {plot_path}", file=sys.stderr if args.json else sys.stdout)
        sys.stdout.flush()
    except UsageError as error:
        print(f"pkex-select: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader (head, less) closed the pipe: stop quietly
        _discard_stdout()
        return 1
    except KeyboardInterrupt:
        return _interrupted()
    except SystemError as error:
        # A Ctrl-C that lands while a numba function returns reaches Python as a SystemError
        # ("returned a result with an exception set") caused by the KeyboardInterrupt.
        if isinstance(error.__cause__, KeyboardInterrupt):
            return _interrupted()
        raise
    except OSError as error:  # stdout is a full disk, a closed file, ...
        _discard_stdout()
        print(
            f"pkex-select: error: cannot write the output: {error.strerror or error}",
            file=sys.stderr,
        )
        return 1
    return 0


def _discard_stdout():
    """Point stdout at the null device, so that the flush at exit cannot fail again."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.stdout = open(os.devnull, "w")


def main_entry():
    """Console-script entry point."""
    sys.exit(main())


if __name__ == "__main__":
    main_entry()
