"""Command-line tool: rank features by their exact Shapley share of HSIC.

    pkex-select                          # demo: the Wisconsin breast-cancer data
    pkex-select rank FILE.csv --target COL [--task auto|classification|regression]
                [--k K] [--estimator biased|unbiased|block] [--permutations N]
                [--plot out.png] [--json]
"""

import argparse
import json
import math
import os
import sys

import numpy as np

_BAR_WIDTH = 30
# From this many samples on, fits print their progress.
_VERBOSE_FROM = 3000


def _parser():
    parser = argparse.ArgumentParser(
        prog="pkex-select",
        description="Rank features by their exact Shapley share of HSIC(X, y). Without a "
        "command, ranks the Wisconsin diagnostic breast-cancer data shipped with scikit-learn.",
    )
    commands = parser.add_subparsers(dest="command")
    rank = commands.add_parser("rank", help="rank the feature columns of a CSV file")
    rank.add_argument("file", help="CSV file with a header row")
    rank.add_argument("--target", required=True, help="name of the target column")
    rank.add_argument("--task", choices=["auto", "classification", "regression"],
                      default="auto", help="auto: classification for text or few integer "
                      "values (at most 20), else regression")
    for sub in (parser, rank):
        sub.add_argument("--k", type=int, default=None,
                         help="number of features to select (default: 20%%, rounded up)")
        sub.add_argument("--estimator", choices=["biased", "unbiased", "block"],
                         default="biased", help="HSIC estimate to attribute (default: biased)")
        sub.add_argument("--permutations", type=int, default=0, metavar="N",
                         help="permutations for per-feature p-values (default: 0, none)")
        sub.add_argument("--seed", type=int, default=0, help="random seed (permutations)")
        sub.add_argument("--plot", metavar="PNG", help="save a bar chart of the values")
        sub.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return parser


class UsageError(Exception):
    """A problem with the user's input, reported without a traceback."""


def _load_csv(path, target, task):
    import pandas as pd
    from pandas.api.types import is_numeric_dtype

    try:
        frame = pd.read_csv(path)
    except FileNotFoundError:
        raise UsageError(f"cannot read {path!r}: no such file") from None
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise UsageError(f"cannot read {path!r} as CSV: {error}") from None
    if target not in frame.columns:
        raise UsageError(
            f"no column {target!r} in {path}; the columns are: {', '.join(map(str, frame.columns))}"
        )
    frame = frame.dropna(subset=[target])
    y = frame[target]
    X = frame.drop(columns=[target])
    if X.shape[1] == 0:
        raise UsageError(f"{path} has no feature columns besides the target {target!r}")
    missing = X.columns[X.isna().any()].tolist()
    if missing:
        raise UsageError(
            f"missing values in {', '.join(map(str, missing))}; fill or drop them first"
        )
    if task == "auto":
        numeric = is_numeric_dtype(y)
        few_integers = numeric and np.all(np.mod(y, 1) == 0) and y.nunique() <= 20
        task = "regression" if numeric and not few_integers else "classification"
    if task == "regression":
        try:
            y = y.astype(float)
        except ValueError:
            message = f"--task regression needs a numeric target; {target!r} is not"
            raise UsageError(message) from None
    else:
        y = y.astype(str)
    categorical = [c for c in X.columns if not is_numeric_dtype(X[c])]
    return X, y, task, categorical


def _demo_data():
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True)
    return data.data, data.target, "classification", []


def rank(X, y, *, k, estimator, permutations, seed, categorical):
    from . import HSICShapleySelector

    n_select = k if k is not None else max(1, math.ceil(0.2 * X.shape[1]))
    if not 1 <= n_select <= X.shape[1]:
        raise UsageError(f"--k must be between 1 and the number of features ({X.shape[1]})")
    selector = HSICShapleySelector(
        n_features_to_select=n_select,
        estimator=estimator,
        categorical_features=categorical or None,
        n_permutations=permutations,
        random_state=seed,
        verbose=int(len(X) >= _VERBOSE_FROM),
    )
    try:
        selector.fit(X, y)
    except ValueError as error:
        raise UsageError(str(error)) from None
    return selector


def _rows(selector, names):
    order = np.argsort(selector.ranking_)
    rows = []
    for j in order:
        row = {
            "rank": int(selector.ranking_[j]),
            "feature": str(names[j]),
            "shapley_value": float(selector.shapley_values_[j]),
            "selected": bool(selector.get_support()[j]),
        }
        if hasattr(selector, "pvalues_"):
            row["pvalue"] = float(selector.pvalues_[j])
        rows.append(row)
    return rows


def _print_table(rows, selector, title, out):
    width = max(len(r["feature"]) for r in rows)
    largest = max(abs(r["shapley_value"]) for r in rows) or 1.0
    print(title, file=out)
    print(f"HSIC = {selector.hsic_:.6g}; the values add up to it. A negative value marks a "
          "feature that is redundant given the others.", file=out)
    print(f"* = selected ({sum(r['selected'] for r in rows)} of {len(rows)})\n", file=out)
    pcol = "pvalues_" in vars(selector)
    header = f"{'rank':>4}  {'feature':<{width}}  {'shapley':>11}"
    print(header + ("  p-value" if pcol else ""), file=out)
    for r in rows:
        length = int(round(_BAR_WIDTH * abs(r["shapley_value"]) / largest))
        bar = ("#" if r["shapley_value"] >= 0 else "-") * length
        line = (f"{r['rank']:>4}{'*' if r['selected'] else ' '} {r['feature']:<{width}}  "
                f"{r['shapley_value']:>11.4g}")
        if pcol:
            line += f"  {r['pvalue']:>7.3f}"
        print(f"{line}  {bar}", file=out)


def _plot(selector, names, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError("--plot needs matplotlib: pip install 'pkex-select[plot]'") from None
    from .plotting import ranking

    ax = ranking(selector.shapley_values_, list(map(str, names)),
                 pvalues=getattr(selector, "pvalues_", None), xlabel="Shapley value of HSIC")
    ax.set_title("Exact Shapley values of HSIC(X, y)")
    ax.figure.tight_layout()
    ax.figure.savefig(path, dpi=120)
    plt.close(ax.figure)


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        if args.command == "rank":
            X, y, task, categorical = _load_csv(args.file, args.target, args.task)
            title = f"{args.file}: {X.shape[0]} rows, {X.shape[1]} features, target " \
                    f"{args.target!r} ({task})"
        else:
            X, y, task, categorical = _demo_data()
            title = ("Wisconsin diagnostic breast cancer (scikit-learn's load_breast_cancer): "
                     f"{X.shape[0]} rows, {X.shape[1]} features, target malignant/benign")
        selector = rank(X, y, k=args.k, estimator=args.estimator,
                        permutations=args.permutations, seed=args.seed,
                        categorical=categorical)
        rows = _rows(selector, X.columns)
        if args.json:
            print(json.dumps({"hsic": selector.hsic_, "task": task, "features": rows}, indent=2))
        else:
            _print_table(rows, selector, title, sys.stdout)
        if args.plot:
            _plot(selector, X.columns, args.plot)
            print(f"\nSaved {args.plot}", file=sys.stderr if args.json else sys.stdout)
    except UsageError as error:
        print(f"pkex-select: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader (head, less) closed the pipe: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0


def main_entry():
    """Console-script entry point."""
    sys.exit(main())


if __name__ == "__main__":
    main_entry()
