"""Which k features should a model use: the selection study on ten real data sets.

    python -m benchmarks.selection [--datasets ...] [--methods ...] [--folds 5]
        [--fraction 0.2] [--seed 0] [--n-jobs 2] [--out DIR] [--recompute METHOD ...]

The clean protocol: outer 5-fold cross-validation (stratified for classes); on each training
part the features are standardised, each method selects k = ceil(fraction * d) of them (at
least 2), and an RBF SVM (``SVC`` / ``SVR`` on the standardised target, gamma "scale") with
C tuned over {1, 10, 100} by inner 3-fold cross-validation is fitted on the selected
columns and scored on the test part (accuracy, R^2). Every method sees the same folds.

Methods: the selector's default (``default``); its games one by one (``paper``: the
published game, ``value_function="baseline"``; ``anova``: the kernel-ANOVA game; each also
at a single bandwidth scale, ``-1``; ``align``: the published game at bandwidths aligned with
y); the peers ExtraTrees (300 trees), mutual information,
HSIC Lasso (pyHSICLasso, B = 20, M = 3), mRMR (F-statistic relevance over mean absolute
correlation with the features already chosen, the FCQ rule of Zhao, Anand and Wang 2019),
the F-test, and a random draw.

Results are cached per (data set, method, fold) under ``OUT/cache``; ``scores.csv`` holds
every fold's score, ``ranks.md`` the mean-rank table (per data set the methods are ranked by
their mean score over the folds, ties sharing the mean rank) and the default's fold-by-fold
wins, ties and losses against each peer. With ``--recompute``, only the methods named are
run, afresh (their cache is written over: its key does not know the code); the others' fold
scores are read from the committed scores file of the same panel and fraction under
``results/`` (whatever ``--out`` says), so that a change to the default is measured against
the same peers' scores without running them again.
"""

import argparse
import hashlib
import json
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed
from scipy.stats import rankdata
from sklearn.compose import TransformedTargetRegressor
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.feature_selection import f_classif, f_regression
from sklearn.inspection import permutation_importance
from sklearn.linear_model import LassoCV, LogisticRegressionCV
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, SVR

from benchmarks._measure import markdown_table, progress
from benchmarks.feature_selection.methods import select as select_peer
from benchmarks.selection import datasets
from pkex_select import HSICShapleySelector

RESULTS = Path(__file__).parent / "results"
# The selector's settings behind each pkex method (the default: none).
PKEX = {
    "default": {},
    "model": {"value_function": "model"},
    "model+anova": {"value_function": "model+anova"},
    "paper": {"value_function": "baseline"},
    "paper-1": {"value_function": "baseline", "scales": [1]},
    "anova": {"value_function": "anova"},
    "anova-1": {"value_function": "anova", "scales": [1]},
    "align": {"value_function": "baseline", "bandwidth": "alignment", "scales": [1]},
}
PEERS = ("trees", "rfperm", "lasso", "mi", "hsiclasso", "mrmr", "ftest", "random")
METHODS = (*PKEX, *PEERS)
# Two scores within this are a tie in the fold-by-fold count.
TIE = 1e-9


def mrmr(X, y, task, k):
    """mRMR with the FCQ rule: F-statistic over the mean |correlation| with those chosen."""
    relevance = (f_classif if task == "classification" else f_regression)(X, y)[0]
    relevance = np.nan_to_num(relevance, nan=0.0)
    correlation = np.abs(np.nan_to_num(np.corrcoef(X, rowvar=False)))
    chosen = [int(np.argmax(relevance))]
    while len(chosen) < k:
        redundancy = np.maximum(correlation[:, chosen].mean(axis=1), 1e-3)
        score = relevance / redundancy
        score[chosen] = -np.inf
        chosen.append(int(np.argmax(score)))
    return np.sort(chosen)


def forest_permutation(X, y, task, k, seed):
    """RandomForest (200 trees) fitted on 75% of the training part, features ranked by
    their permutation importance on the other 25% (5 repeats)."""
    classification = task == "classification"
    split = train_test_split(
        np.arange(len(y)), test_size=0.25, random_state=seed, stratify=y if classification else None
    )
    forest = (RandomForestClassifier if classification else RandomForestRegressor)(
        n_estimators=200, random_state=seed, n_jobs=1
    ).fit(X[split[0]], y[split[0]])
    importance = permutation_importance(
        forest, X[split[1]], y[split[1]], n_repeats=5, random_state=seed
    ).importances_mean
    return np.sort(np.argsort(-importance, kind="stable")[:k])


def lasso(X, y, task, k, seed):
    """LassoCV for regression, L1-penalised logistic regression for classes with the
    penalty chosen by cross-validated log loss (accuracy picks the empty model on rare
    classes); features ranked by their largest coefficient magnitude."""
    if task == "classification":
        # The warnings of scikit-learn's 1.10 transition are ignored with the others.
        model = LogisticRegressionCV(
            Cs=10,
            l1_ratios=(1.0,),
            solver="saga",
            scoring="neg_log_loss",
            max_iter=2000,
            tol=1e-3,
            random_state=seed,
        )
        coef = np.abs(model.fit(X, y).coef_).max(axis=0)
    else:
        coef = np.abs(LassoCV(random_state=seed, max_iter=10000).fit(X, y).coef_)
    return np.sort(np.argsort(-coef, kind="stable")[:k])


def select(method, X, y, task, k, seed):
    """Indices of the k features ``method`` selects on standardised (X, y)."""
    if method in PKEX:
        # The codes of many classes would pass for a continuous target: say what they are, as
        # a user who knows the task does (the peers are told too).
        target_kernel = "delta" if task == "classification" else "auto"
        selector = HSICShapleySelector(
            n_features_to_select=k, random_state=seed, target_kernel=target_kernel, **PKEX[method]
        )
        return np.sort(selector.fit(X, y).get_support(indices=True))
    if method == "mrmr":
        return mrmr(X, y, task, k)
    if method == "rfperm":
        return forest_permutation(X, y, task, k, seed)
    if method == "lasso":
        return lasso(X, y, task, k, seed)
    if method == "random":
        return np.sort(np.random.default_rng(seed).choice(X.shape[1], k, replace=False))
    peer = {"ftest": "kbest"}.get(method, method)
    return select_peer(peer, X, y, task, k, seed, scale=False)


def svm(task, seed):
    """An RBF SVM on standardised inputs (and targets), C tuned by inner 3-fold CV."""
    if task == "classification":
        model = make_pipeline(StandardScaler(), SVC())
        splitter = StratifiedKFold(3, shuffle=True, random_state=seed)
        grid = {"svc__C": [1, 10, 100]}
    else:
        model = TransformedTargetRegressor(
            make_pipeline(StandardScaler(), SVR()), transformer=StandardScaler()
        )
        splitter = KFold(3, shuffle=True, random_state=seed)
        grid = {"regressor__svr__C": [1, 10, 100]}
    return GridSearchCV(model, grid, cv=splitter)


def k_for(n_features, fraction):
    return max(2, math.ceil(fraction * n_features))


def folds(dataset, n_folds, seed):
    splitter = (StratifiedKFold if dataset.task == "classification" else KFold)(
        n_folds, shuffle=True, random_state=seed
    )
    return list(splitter.split(dataset.X, dataset.y))


def _cache_key(method):
    """The method's name, and for the default the settings it stands for (they change)."""
    if method != "default":
        return method
    params = HSICShapleySelector().get_params()
    return "default-" + hashlib.sha1(repr(sorted(params.items())).encode()).hexdigest()[:8]


def run_task(name, method, fold, args):
    """Select on one training part and score the tuned SVM on its test part; cached."""
    cache = (
        args.out / "cache" / f"{args.fraction:g}" / name / _cache_key(method) / f"fold{fold}.json"
    )
    if cache.exists() and method not in (args.recompute or ()):
        return json.loads(cache.read_text())
    dataset = datasets.load(name)
    train, test = folds(dataset, args.folds, args.seed)[fold]
    scaler = StandardScaler().fit(dataset.X[train])
    X_train, y_train = scaler.transform(dataset.X[train]), dataset.y[train]
    k = k_for(dataset.X.shape[1], args.fraction)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        selected = select(method, X_train, y_train, dataset.task, k, args.seed + fold)
        seconds = time.perf_counter() - start
        model = svm(dataset.task, args.seed).fit(X_train[:, selected], y_train)
        score = model.score(scaler.transform(dataset.X[test])[:, selected], dataset.y[test])
    record = {"selected": [int(j) for j in selected], "seconds": seconds, "score": score}
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(record))
    return record


def _suffix(args):
    """The results files' suffix: the panel (unless "study") and the fraction (unless 0.2)."""
    return ("" if args.panel == "study" else f"-{args.panel}") + (
        "" if args.fraction == 0.2 else f"-{args.fraction:g}"
    )


def committed_scores(path, recompute):
    """The fold scores of ``path`` (a scores file) of every method not in ``recompute``,
    as records keyed like :func:`collect`'s."""
    records = {}
    for line in path.read_text().splitlines()[1:]:
        dataset, method, fold, score = line.split(",")
        if method not in recompute:
            records[(dataset, method, int(fold) - 1)] = {"score": float(score)}
    return records


def collect(args):
    jobs = [(d, m, f) for d in args.datasets for m in args.methods for f in range(args.folds)]
    known = {}
    if args.recompute is not None:
        committed = committed_scores(RESULTS / f"scores{_suffix(args)}.csv", set(args.recompute))
        known = {job: committed[job] for job in jobs if job in committed}
    missing = [job for job in jobs if job not in known]
    results = Parallel(n_jobs=args.n_jobs, return_as="generator_unordered")(
        delayed(lambda job: (job, run_task(*job, args)))(job) for job in missing
    )
    return {
        **known,
        **dict(progress(results, total=len(missing), desc="selection study", file=sys.stderr)),
    }


def mean_ranks(scores):
    """Per data set the methods ranked by mean score (1 = best); the mean over data sets."""
    per_set = {
        d: rankdata([-np.mean(s) for s in by_method.values()]) for d, by_method in scores.items()
    }
    methods = list(next(iter(scores.values())))
    return {
        m: float(np.mean([ranks[i] for ranks in per_set.values()])) for i, m in enumerate(methods)
    }, per_set


def rank_intervals(per_set, methods, resamples=2000, seed=0):
    """Bootstrap 95% intervals of each method's mean rank, data sets drawn with replacement."""
    ranks = np.array(list(per_set.values()))  # (data sets, methods)
    draws = np.random.default_rng(seed).integers(0, len(ranks), (resamples, len(ranks)))
    means = ranks[draws].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5], axis=0)
    return {m: (low[i], high[i]) for i, m in enumerate(methods)}


def head_to_head(scores, method, other):
    """Folds where ``method`` scores above, within TIE of, and below ``other``."""
    wins = ties = losses = 0
    for by_method in scores.values():
        for a, b in zip(by_method[method], by_method[other]):
            if abs(a - b) <= TIE:
                ties += 1
            elif a > b:
                wins += 1
            else:
                losses += 1
    return wins, ties, losses


def ranks_text(scores, methods, title):
    """The mean-rank table (with bootstrap intervals) and the default's fold-by-fold duels."""
    overall, per_set = mean_ranks(scores)
    intervals = rank_intervals(per_set, methods)
    order = sorted(methods, key=overall.get)
    names = list(scores)
    header = ["method", "mean rank", "95% interval", *names]
    table = [
        [m, f"{overall[m]:.2f}", "[{:.2f}, {:.2f}]".format(*intervals[m])]
        + [f"{np.mean(scores[d][m]):.3f} ({per_set[d][methods.index(m)]:g})" for d in names]
        for m in order
    ]
    text = f"## {title}\n\n" + markdown_table(header, table)
    # The paper's game is the published method; the package's other games are ablations of
    # the default, not competitors: the ranks among the default and the peers alone,
    # computed again without them.
    peers = [m for m in methods if m in ("default", "paper", *PEERS)]
    if "default" in methods and len(peers) < len(methods):
        alone = {d: {m: by_method[m] for m in peers} for d, by_method in scores.items()}
        peer_ranks, peer_per_set = mean_ranks(alone)
        peer_intervals = rank_intervals(peer_per_set, peers)
        text += (
            "\nAmong the default and the peers alone, the paper's game one of them (the "
            "ranks computed again):\n\n"
        )
        text += markdown_table(
            ["method", "mean rank", "95% interval"],
            [
                [m, f"{peer_ranks[m]:.2f}", "[{:.2f}, {:.2f}]".format(*peer_intervals[m])]
                for m in sorted(peers, key=peer_ranks.get)
            ],
        )
    if "default" in methods:
        duels = [
            [other, *map(str, head_to_head(scores, "default", other))]
            for other in order
            if other != "default"
        ]
        text += "\nThe default fold by fold (wins, ties, losses):\n\n"
        text += markdown_table(["against", "wins", "ties", "losses"], duels)
    return text


def write(records, args):
    # Ranked as written to scores.csv (6 decimals), so that the tables follow from it: a
    # score recomputed in full precision beside one read back from the file would break ties.
    scores = {
        d: {
            m: [round(records[(d, m, f)]["score"], 6) for f in range(args.folds)]
            for m in args.methods
        }
        for d in args.datasets
    }
    rows = [
        {"dataset": d, "method": m, "fold": f + 1, "score": f"{s:.6f}"}
        for d, by_method in scores.items()
        for m, values in by_method.items()
        for f, s in enumerate(values)
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    suffix = _suffix(args)
    with open(args.out / f"scores{suffix}.csv", "w") as f:
        f.write("dataset,method,fold,score\n")
        f.writelines(f"{r['dataset']},{r['method']},{r['fold']},{r['score']}\n" for r in rows)
    parts = [(args.panel, args.datasets)]
    if args.panel == "all":
        # The held-out half is what claims quote; the tuning half is where rules were chosen.
        parts = [(half, datasets.PANELS[half]) for half in ("heldout", "tuning")] + parts
    text = "\n\n".join(
        ranks_text(
            {d: scores[d] for d in names},
            list(args.methods),
            f"{panel!r}: {len(names)} data sets",
        )
        for panel, names in parts
    )
    (args.out / f"ranks{suffix}.md").write_text(
        f"# Selection study: k = ceil({args.fraction:g} d) features, tuned RBF SVM\n\n"
        f"Mean score over {args.folds} outer folds (accuracy; R^2 for regression) and, in "
        "brackets, the method's rank on that data set; the mean rank over the data sets, "
        "with a bootstrap 95% interval (2000 resamples of the data sets). `python -m "
        f"benchmarks.selection --panel {args.panel} --fraction {args.fraction:g}`.\n\n{text}\n"
    )
    print(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=None)
    parser.add_argument("--panel", choices=list(datasets.PANELS), default="study")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--fraction", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--recompute",
        nargs="+",
        choices=METHODS,
        default=None,
        help="run only these methods; read the others' scores from the committed file",
    )
    args = parser.parse_args(argv)
    args.datasets = args.datasets or list(datasets.PANELS[args.panel])
    write(collect(args), args)


if __name__ == "__main__":
    main()
