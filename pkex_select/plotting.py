"""Figures for explanations and feature attributions (needs matplotlib).

Each function draws on ``ax`` (a new figure when None) and returns the axes.
"""

import numpy as np
from sklearn.utils.validation import check_is_fitted

__all__ = [
    "bar",
    "beeswarm",
    "centred_importance",
    "interactions",
    "intervals",
    "knockoffs",
    "ranking",
    "waterfall",
]


def _axes(ax, figsize):
    if ax is not None:
        return ax
    try:
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise ImportError("Plotting needs matplotlib: pip install 'pkex-select[plot]'") from error
    return plt.subplots(figsize=figsize)[1]


def _is_selector(source):
    from ._selection import ShapleySelectorBase

    return isinstance(source, ShapleySelectorBase)


def _feature_names(estimator):
    names = getattr(estimator, "feature_names_in_", None)
    return (
        [str(name) for name in names]
        if names is not None
        else [f"x{j}" for j in range(estimator.n_features_in_)]
    )


def _statistic_name(selector):
    return "HSIC" if hasattr(selector, "hsic_") else "MMD"


def _explanation(source, what, order=1):
    """An :class:`~pkex_select.Explanation`, or a fitted selector read as one of one row.

    A selector's values add up to its statistic, so the row's base value is 0; order 2 reads
    its ``interaction_values_``.
    """
    from .explain import Explanation

    if isinstance(source, Explanation):
        return source
    if not _is_selector(source):
        raise TypeError(
            f"{what} draws an Explanation (ProductKernelExplainer.explain) or a fitted "
            f"HSICShapleySelector or MMDShapleyAttributor; got {type(source).__name__}."
        )
    check_is_fitted(source, "shapley_values_")
    if order == 1:
        values, index = source.shapley_values_, "SV"
    elif hasattr(source, "interaction_values_"):
        values, index = source.interaction_values_, source.interactions
    else:
        raise ValueError(
            f"{what} needs the selector's interaction_values_: fit it with "
            "interactions='SII' (or another pairwise index)."
        )
    return Explanation(
        values=np.asarray(values)[None],
        base_values=np.zeros(1),
        data=np.full((1, source.n_features_in_), np.nan),
        feature_names=_feature_names(source),
        output_names=[_statistic_name(source)],
        index=index,
    )


def _output_values(explanation, output, order=1):
    if explanation.max_order != order:
        raise ValueError(
            f"This plot needs an explanation of order {order}; got {explanation.index} "
            f"values of order {explanation.max_order}."
            + (
                " Use plotting.interactions for pairwise indices."
                if order == 1
                else " Use explain(X, index='SII', max_order=2)."
            )
        )
    names = list(explanation.output_names)
    if isinstance(output, str):
        if output not in names:
            raise ValueError(
                f"output {output!r} is not an output of this explanation; its outputs are {names}."
            )
        output = names.index(output)
    elif not -len(names) <= output < len(names):
        raise ValueError(f"output {output} is out of range for the {len(names)} outputs {names}.")
    values = explanation.values
    if values.ndim == 2 + order:
        return values[..., output], np.asarray(explanation.base_values)[:, output]
    return values, np.asarray(explanation.base_values)


def centred_importance(values):
    """``mean_i |phi_ij - mean_i phi_ij|``: how much feature j moves the output row to row.

    ``values`` is an :class:`~pkex_select.Explanation` or its ``values`` array (rows
    first); a multi-output explanation gives one column per output.

    Under the baseline value function a removed feature acts as if the row matched every
    expansion point on it, so phi_j carries a constant offset per feature (the same in every
    row). ``mean |phi|`` would rank that offset; this ranks the variation. Under the
    observational value function with the data as background the values are already
    centred, and the two agree.
    """
    from .explain import Explanation

    if isinstance(values, Explanation):
        values = values.values
    values = np.asarray(values, dtype=float)
    return np.abs(values - values.mean(axis=0)).mean(axis=0)


def ranking(
    values,
    feature_names=None,
    *,
    pvalues=None,
    alpha=0.05,
    max_display=20,
    ax=None,
    xlabel="Shapley value",
    pvalue_label="p-value",
):
    """Horizontal bars of per-feature values, the ``max_display`` largest on top.

    Parameters
    ----------
    values : array-like of shape (n_features,), or a fitted selector
        A selector (:class:`~pkex_select.HSICShapleySelector`,
        :class:`~pkex_select.MMDShapleyAttributor`) gives its ``shapley_values_``, feature
        names and, when it was fitted with permutations, its adjusted p-values.
    feature_names : list of str, default=None
        Required with an array of values.
    pvalues : array-like of shape (n_features,), default=None
        When given, bars of features with p-value at most ``alpha`` are solid, the others
        hatched, each bar is labelled with its p-value, and a legend says which is which.
    alpha : float or None, default=0.05
        The level that splits solid from hatched bars; None labels the bars with their
        p-values and draws them all solid.
    max_display : int, default=20
    ax : matplotlib Axes, default=None
    xlabel : str, default="Shapley value"
    pvalue_label : str, default="p-value"
        What the p-values are, for the legend ("adjusted p-value (maxT)", "raw p-value").

    Returns
    -------
    matplotlib Axes
    """
    if hasattr(values, "steps") and hasattr(values, "named_steps"):
        steps = [name for name, step in values.steps if _is_selector(step)]
        hint = (
            f"its step: plotting.ranking(pipeline.named_steps[{steps[0]!r}])"
            if steps
            else ("a fitted HSICShapleySelector or MMDShapleyAttributor")
        )
        raise TypeError(f"ranking draws a selector's values, not a Pipeline; pass {hint}.")
    if hasattr(values, "base_values"):
        raise TypeError(
            "ranking draws a selector's values or an array of them, not an Explanation; "
            "use plotting.bar(explanation) for its global importance."
        )
    if hasattr(values, "fit") and not _is_selector(values):
        raise TypeError(
            f"ranking draws a fitted selector's values, not a {type(values).__name__}; to "
            "rank what a fitted model uses, explain it first: "
            "plotting.bar(ProductKernelExplainer(model).explain(X))."
        )
    if _is_selector(values):
        selector = values
        check_is_fitted(selector, "shapley_values_")
        values, feature_names = selector.shapley_values_, _feature_names(selector)
        if pvalues is None and hasattr(selector, "adjusted_pvalues_"):
            pvalues = selector.adjusted_pvalues_
            pvalue_label = f"adjusted p-value ({selector.correction})"
        if xlabel == "Shapley value":
            xlabel = f"Shapley value of {_statistic_name(selector)}"
            if getattr(selector, "value_function_", None) == "baseline" and np.any(values < 0):
                xlabel += "\n(< 0: adds less about y than it costs by narrowing the joint kernel)"
    values = np.asarray(values, dtype=float)
    if feature_names is None or values.ndim != 1 or len(feature_names) != values.size:
        raise ValueError(
            "ranking needs one feature name per value; got "
            f"{'no' if feature_names is None else len(feature_names)} names for values of "
            f"shape {values.shape}."
        )
    if pvalues is not None and np.shape(pvalues) != values.shape:
        raise ValueError(
            f"pvalues must have one entry per value; got shape {np.shape(pvalues)} for "
            f"{values.size} values."
        )
    order = np.argsort(-values, kind="stable")[:max_display][::-1]
    ax = _axes(ax, (6, 0.3 * len(order) + 1.2))
    colors = np.where(values[order] >= 0, "#d62728", "#1f77b4")
    bars = ax.barh(np.arange(len(order)), values[order], color=colors)
    if pvalues is not None:
        from matplotlib.patches import Patch

        pvalues = np.asarray(pvalues, dtype=float)
        for bar, j in zip(bars, order):
            if alpha is not None and pvalues[j] > alpha:
                bar.set_hatch("//")
                bar.set_alpha(0.5)
            # Labels sit right of the bar or of zero, clear of the feature names.
            ax.annotate(
                f"p={pvalues[j]:.3g}",
                (max(bar.get_width(), 0.0), bar.get_y() + 0.4),
                xytext=(3, 0),
                textcoords="offset points",
                va="center",
                fontsize=8,
            )
        if alpha is not None:
            ax.legend(
                handles=[
                    Patch(facecolor="grey", label=f"{pvalue_label} <= {alpha:g}"),
                    Patch(
                        facecolor="grey", alpha=0.5, hatch="//", label=f"{pvalue_label} > {alpha:g}"
                    ),
                ],
                loc="lower right",
                fontsize=8,
            )
    ax.set_yticks(np.arange(len(order)), [str(feature_names[j]) for j in order])
    ax.axvline(0, color="black", linewidth=0.8)
    ax.ticklabel_format(axis="x", style="sci", scilimits=(-3, 4))
    ax.set_xlabel(xlabel)
    return ax


def knockoffs(selector, *, draw=0, max_display=20, ax=None):
    """The knockoff statistics W of a selector fitted with ``fdr``, and its threshold.

    One bar per feature (or group, named by its members), the ``max_display`` largest in magnitude;
    selected ones solid, the others hatched, and the draw's knockoff+ threshold T drawn at
    +T and -T: a feature y does not depend on given the others falls on either side of zero
    with equal chance, so the bars left of -T show how many false ones stand right of +T.

    Parameters
    ----------
    selector : HSICShapleySelector or MMDShapleyAttributor
        Fitted with ``fdr``.
    draw : int, default=0
        Which knockoff draw to show.
    max_display : int, default=20
    ax : matplotlib Axes, default=None

    Returns
    -------
    matplotlib Axes
    """
    check_is_fitted(selector, "shapley_values_")
    if not hasattr(selector, "knockoff_statistics_"):
        raise ValueError("knockoffs draws a fit with fdr set; fit the selector with fdr=0.2.")
    statistics = selector.knockoff_statistics_
    if not 0 <= draw < statistics.shape[0]:
        raise ValueError(f"draw must be in [0, {statistics.shape[0] - 1}], got {draw}.")
    W, threshold = statistics[draw], selector.knockoff_thresholds_[draw]
    names = np.asarray(_feature_names(selector), dtype=object)
    groups = selector.knockoff_groups_
    labels = [" + ".join(map(str, names[groups == g])) for g in range(W.size)]
    order = np.argsort(-np.abs(W), kind="stable")[:max_display]
    order = order[np.argsort(W[order], kind="stable")]
    ax = _axes(ax, (6, 0.3 * len(order) + 1.2))
    bars = ax.barh(np.arange(len(order)), W[order], color="#d62728")
    for bar, g in zip(bars, order):
        if g not in selector.selected_groups_:
            bar.set_hatch("//")
            bar.set_alpha(0.5)
    if np.isfinite(threshold):
        for position in (threshold, -threshold):
            ax.axvline(position, color="grey", linestyle="--", linewidth=0.8)
    ax.set_yticks(np.arange(len(order)), [labels[g] for g in order])
    ax.axvline(0, color="black", linewidth=0.8)
    ax.ticklabel_format(axis="x", style="sci", scilimits=(-3, 4))
    ax.set_xlabel(
        f"W = value - knockoff's value ({_statistic_name(selector)}); dashed: +-T at "
        f"fdr={selector.fdr:g}; solid: selected"
    )
    return ax


def bar(explanation, *, output=0, max_display=20, ax=None, centred=True):
    """Global importance per feature: over the explained rows, or a selector's values.

    Parameters
    ----------
    explanation : Explanation or fitted selector
        For an :class:`~pkex_select.Explanation`, the centred importance
        ``mean |phi - mean phi|`` over its rows (see :func:`centred_importance`): under the
        baseline value function ``mean |phi|`` is mostly a constant offset per feature. A
        fitted :class:`~pkex_select.HSICShapleySelector` or
        :class:`~pkex_select.MMDShapleyAttributor` has one value per feature already: its
        Shapley values are drawn by :func:`ranking`, with its adjusted p-values if any.
    output : int or str, default=0
        Which output of a multi-output explanation (position or name).
    max_display : int, default=20
    ax : matplotlib Axes, default=None
    centred : bool, default=True
        ``False`` shows ``mean |phi|`` of an explanation.

    Returns
    -------
    matplotlib Axes
    """
    if _is_selector(explanation):
        return ranking(explanation, max_display=max_display, ax=ax)
    explanation = _explanation(explanation, "bar")
    values, _ = _output_values(explanation, output)
    importance = centred_importance(values) if centred else np.abs(values).mean(axis=0)
    label = "mean |Shapley value - its mean|" if centred else "mean |Shapley value|"
    ax = ranking(
        importance, explanation.feature_names, max_display=max_display, ax=ax, xlabel=label
    )
    for patch in ax.patches:
        patch.set_color("#1f77b4")
    return ax


def waterfall(explanation, row=0, *, output=0, max_display=12, ax=None):
    """How one row's output is built from the base value, feature by feature.

    Parameters
    ----------
    explanation : Explanation or fitted selector
        A fitted selector shows how its statistic is built from 0 by its features' values.
    row : int, default=0
        Which row of the explanation.
    output : int or str, default=0
        Which output of a multi-output explanation (position or name).
    max_display : int, default=12
        Features shown one by one, largest ``|value|`` first; the rest are summed in one bar.
    ax : matplotlib Axes, default=None

    Returns
    -------
    matplotlib Axes
        Each bar is labelled with its value; red bars raise the output, blue ones lower it.
    """
    selector = _is_selector(explanation)
    explanation = _explanation(explanation, "waterfall")
    values, base_values = _output_values(explanation, output)
    if not isinstance(row, (int, np.integer)) or isinstance(row, bool):
        raise TypeError(f"row must be an integer row position, got {row!r}.")
    if not -len(values) <= row < len(values):
        raise ValueError(f"row {row} is out of range for an explanation of {len(values)} rows.")
    phi, base = values[row], float(base_values[row])
    order = np.argsort(-np.abs(phi), kind="stable")
    shown, rest = order[:max_display], order[max_display:]
    labels = [
        str(explanation.feature_names[j])
        if selector
        else f"{explanation.feature_names[j]} = {explanation.data[row, j]:.3g}"
        for j in shown
    ]
    steps = list(phi[shown])
    if rest.size:
        labels.append(f"{rest.size} other features")
        steps.append(phi[rest].sum())
    ax = _axes(ax, (7, 0.35 * len(steps) + 1.5))
    start = base
    for position, step in enumerate(steps):
        y = len(steps) - 1 - position
        (patch,) = ax.barh(y, step, left=start, color="#d62728" if step >= 0 else "#1f77b4")
        patch.sticky_edges.x.clear()  # let the margins keep the end bars off the frame
        end = start + step
        ax.annotate(
            f"{step:+.3g}",
            (end, y),
            xytext=(3 if step >= 0 else -3, 0),
            textcoords="offset points",
            va="center",
            fontsize=8,
            ha="left" if step >= 0 else "right",
        )
        start = end
    ax.set_yticks(np.arange(len(steps))[::-1], labels)
    ax.axvline(base, color="grey", linestyle=":", linewidth=1)
    ax.axvline(start, color="black", linewidth=1)
    ax.margins(x=0.15, y=0.04)
    if selector:
        ax.set_xlabel(f"{explanation.output_names[0]} (0 -> {start:.3g})")
    else:
        ax.set_xlabel(f"output (base {base:.3g} -> {start:.3g})")
    return ax


def intervals(explanation, row=0, *, output=0, level=0.95, max_display=12, ax=None):
    """One row's Shapley values with their posterior intervals (a GP explained with
    ``return_covariance=True``).

    Parameters
    ----------
    explanation : Explanation
        With ``covariance`` (see :meth:`pkex_select.ProductKernelExplainer.explain`).
    row : int, default=0
    output : int or str, default=0
    level : float, default=0.95
        The intervals' coverage under the Gaussian posterior: value +- z std.
    max_display : int, default=12
        Features shown, largest ``|value|`` first.
    ax : matplotlib Axes, default=None

    Returns
    -------
    matplotlib Axes
        Features whose interval excludes 0 are drawn filled (the data support the sign of
        their attribution); the others hollow (within the posterior's noise).
    """
    from scipy.stats import norm

    explanation = _explanation(explanation, "intervals")
    if explanation.covariance is None:
        raise ValueError(
            "intervals needs the posterior covariance: explain a Gaussian process with "
            "ProductKernelExplainer(gp, value_function='observational').explain(X, "
            "return_covariance=True)."
        )
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level!r}.")
    values, _ = _output_values(explanation, output)
    std = explanation.std
    if std.ndim == 3:
        std = std[
            ..., output if isinstance(output, int) else explanation.output_names.index(output)
        ]
    phi, spread = values[row], std[row] * norm.ppf(0.5 + level / 2)
    order = np.argsort(-np.abs(phi), kind="stable")[:max_display]
    ax = _axes(ax, (7, 0.35 * order.size + 1.5))
    for position, j in enumerate(order):
        y = order.size - 1 - position
        supported = abs(phi[j]) > spread[j]
        colour = "#d62728" if phi[j] >= 0 else "#1f77b4"
        ax.errorbar(
            phi[j],
            y,
            xerr=spread[j],
            fmt="o",
            color=colour,
            capsize=3,
            markerfacecolor=colour if supported else "white",
        )
    labels = [f"{explanation.feature_names[j]} = {explanation.data[row, j]:.3g}" for j in order]
    ax.set_yticks(np.arange(order.size)[::-1], labels)
    ax.axvline(0.0, color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel(f"Shapley value with its {level:.0%} posterior interval")
    return ax


def beeswarm(explanation, *, output=0, max_display=15, ax=None, seed=0):
    """Every row's value per feature, coloured by the feature's value (low blue, high red).

    Parameters
    ----------
    explanation : Explanation
        Several rows of Shapley values. (A fitted selector has one value per feature, not
        one per row: draw it with :func:`bar`.)
    output : int or str, default=0
        Which output of a multi-output explanation (position or name).
    max_display : int, default=15
        Features ranked by :func:`centred_importance` (variation across rows, not the
        per-feature offset of the baseline value function).
    ax : matplotlib Axes, default=None
    seed : int, default=0
        The vertical jitter of the points.

    Returns
    -------
    matplotlib Axes
    """
    if _is_selector(explanation):
        raise TypeError(
            "beeswarm draws one point per explained row; a fitted selector has one value per "
            "feature. Use plotting.bar(selector), or explain rows of a fitted model with "
            "ProductKernelExplainer."
        )
    explanation = _explanation(explanation, "beeswarm")
    values, _ = _output_values(explanation, output)
    order = np.argsort(centred_importance(values), kind="stable")[::-1][:max_display][::-1]
    ax = _axes(ax, (7, 0.35 * len(order) + 1.5))
    jitter = np.random.default_rng(seed)
    for position, j in enumerate(order):
        feature = explanation.data[:, j]
        spread = np.ptp(feature)
        colour = (feature - feature.min()) / spread if spread > 0 else np.full(feature.shape, 0.5)
        offsets = jitter.uniform(-0.25, 0.25, size=values.shape[0])
        scatter = ax.scatter(
            values[:, j], position + offsets, c=colour, cmap="coolwarm", vmin=0, vmax=1, s=10
        )
    ax.set_yticks(np.arange(len(order)), [explanation.feature_names[j] for j in order])
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel("Shapley value")
    if len(order):
        ax.figure.colorbar(scatter, ax=ax, label="feature value (low to high)")
    return ax


def interactions(explanation, *, row=None, output=0, max_display=12, ax=None):
    """Heat map of pairwise interaction indices.

    Parameters
    ----------
    explanation : Explanation of order 2, or fitted selector
        An explanation from ``explain(X, index="SII", max_order=2)`` (or another pairwise
        index), or a selector fitted with ``interactions`` set, whose
        ``interaction_values_`` are drawn signed.
    row : int, default=None
        With None, each cell is the mean over rows of the index's absolute value; with a
        row, the signed matrix of that row.
    output : int or str, default=0
        Which output of a multi-output explanation (position or name).
    max_display : int, default=12
        The features with the largest total off-diagonal interaction.
    ax : matplotlib Axes, default=None

    Returns
    -------
    matplotlib Axes
        The diagonal (order-one values) is left blank: it is on another scale.
    """
    if _is_selector(explanation) and row is None:
        row = 0
    explanation = _explanation(explanation, "interactions", order=2)
    values, _ = _output_values(explanation, output, order=2)
    matrix = np.abs(values).mean(axis=0) if row is None else values[row]
    off_diagonal = matrix.copy()
    np.fill_diagonal(off_diagonal, np.nan)
    strength = np.nansum(np.abs(off_diagonal), axis=1)
    shown = np.sort(np.argsort(-strength, kind="stable")[:max_display])
    cells = off_diagonal[np.ix_(shown, shown)]
    ax = _axes(ax, (0.45 * len(shown) + 2.5, 0.45 * len(shown) + 1.5))
    limit = np.nanmax(np.abs(cells)) if np.isfinite(cells).any() else 1.0
    if row is None:
        image = ax.imshow(cells, cmap="Reds", vmin=0, vmax=limit or 1.0)
        label = f"mean |{explanation.index}|"
    else:
        image = ax.imshow(cells, cmap="coolwarm", vmin=-(limit or 1.0), vmax=limit or 1.0)
        label = explanation.index if len(explanation) == 1 else f"{explanation.index}, row {row}"
    names = [str(explanation.feature_names[j]) for j in shown]
    ax.set_xticks(np.arange(len(shown)), names, rotation=90)
    ax.set_yticks(np.arange(len(shown)), names)
    ax.figure.colorbar(image, ax=ax, label=label)
    return ax
