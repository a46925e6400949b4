"""Figures for explanations and feature attributions (needs matplotlib).

Each function draws on ``ax`` (a new figure when None) and returns the axes.
"""

import numpy as np

__all__ = ["bar", "beeswarm", "centred_importance", "interactions", "ranking", "waterfall"]


def _axes(ax, figsize):
    if ax is not None:
        return ax
    try:
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise ImportError("Plotting needs matplotlib: pip install 'pkex-select[plot]'") from error
    return plt.subplots(figsize=figsize)[1]


def _output_values(explanation, output, order=1):
    if explanation.max_order != order:
        raise ValueError(
            f"This plot needs an explanation of order {order}; got {explanation.index} "
            f"values of order {explanation.max_order}."
            + (" Use plotting.interactions for pairwise indices." if order == 1 else
               " Use explain(X, index='SII', max_order=2).")
        )
    values = explanation.values
    if values.ndim == 2 + order:
        if isinstance(output, str):
            output = explanation.output_names.index(output)
        return values[..., output], np.asarray(explanation.base_values)[:, output]
    return values, np.asarray(explanation.base_values)


def centred_importance(values):
    """``mean_i |phi_ij - mean_i phi_ij|``: how much feature j moves the output row to row.

    Under the baseline value function a removed feature acts as if the row matched every
    expansion point on it, so phi_j carries a constant offset per feature (the same in every
    row). ``mean |phi|`` would rank that offset; this ranks the variation. Under the
    observational value function with the data as background the values are already
    centred, and the two agree.
    """
    values = np.asarray(values, dtype=float)
    return np.abs(values - values.mean(axis=0)).mean(axis=0)


def ranking(values, feature_names, *, pvalues=None, alpha=0.05, max_display=20, ax=None,
            xlabel="Shapley value"):
    """Horizontal bars of per-feature values, the ``max_display`` largest on top.

    With ``pvalues``, bars of features significant at ``alpha`` are solid and the others
    hatched, and each bar is labelled with its p-value.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim != 1 or len(feature_names) != values.size:
        raise ValueError(
            f"ranking needs one feature name per value; got {len(feature_names)} names for "
            f"values of shape {values.shape}."
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
        pvalues = np.asarray(pvalues, dtype=float)
        for bar, j in zip(bars, order):
            if pvalues[j] > alpha:
                bar.set_hatch("//")
                bar.set_alpha(0.5)
            # Labels sit right of the bar or of zero, clear of the feature names.
            ax.annotate(f"p={pvalues[j]:.3g}", (max(bar.get_width(), 0.0), bar.get_y() + 0.4),
                        xytext=(3, 0), textcoords="offset points", va="center", fontsize=8)
    ax.set_yticks(np.arange(len(order)), [str(feature_names[j]) for j in order])
    ax.axvline(0, color="black", linewidth=0.8)
    ax.ticklabel_format(axis="x", style="sci", scilimits=(-3, 4))
    ax.set_xlabel(xlabel)
    return ax


def bar(explanation, *, output=0, max_display=20, ax=None, centred=True):
    """Global importance per feature over the explained rows.

    By default the centred importance ``mean |phi - mean phi|`` (see
    :func:`centred_importance`): under the baseline value function ``mean |phi|`` is mostly a
    constant offset per feature. ``centred=False`` shows ``mean |phi|``.
    """
    values, _ = _output_values(explanation, output)
    importance = centred_importance(values) if centred else np.abs(values).mean(axis=0)
    label = "mean |Shapley value - its mean|" if centred else "mean |Shapley value|"
    ax = ranking(importance, explanation.feature_names, max_display=max_display, ax=ax,
                 xlabel=label)
    for patch in ax.patches:
        patch.set_color("#1f77b4")
    return ax


def waterfall(explanation, row=0, *, output=0, max_display=12, ax=None):
    """How one row's output is built from the base value, feature by feature."""
    values, base_values = _output_values(explanation, output)
    phi, base = values[row], float(base_values[row])
    order = np.argsort(-np.abs(phi), kind="stable")
    shown, rest = order[:max_display], order[max_display:]
    labels = [f"{explanation.feature_names[j]} = {explanation.data[row, j]:.3g}" for j in shown]
    steps = list(phi[shown])
    if rest.size:
        labels.append(f"{rest.size} other features")
        steps.append(phi[rest].sum())
    ax = _axes(ax, (7, 0.35 * len(steps) + 1.5))
    start = base
    for position, step in enumerate(steps):
        y = len(steps) - 1 - position
        ax.barh(y, step, left=start, color="#d62728" if step >= 0 else "#1f77b4")
        start += step
    ax.set_yticks(np.arange(len(steps))[::-1], labels)
    ax.axvline(base, color="grey", linestyle=":", linewidth=1)
    ax.axvline(start, color="black", linewidth=1)
    ax.margins(x=0.08)
    ax.set_xlabel(f"output (base {base:.3g} -> {start:.3g})")
    return ax


def beeswarm(explanation, *, output=0, max_display=15, ax=None, seed=0):
    """Every row's value per feature, coloured by the feature's value (low blue, high red).

    Features are ranked by :func:`centred_importance` (variation across rows, not the
    per-feature offset of the baseline value function).
    """
    values, _ = _output_values(explanation, output)
    order = np.argsort(centred_importance(values), kind="stable")[::-1][:max_display][::-1]
    ax = _axes(ax, (7, 0.35 * len(order) + 1.5))
    jitter = np.random.default_rng(seed)
    for position, j in enumerate(order):
        feature = explanation.data[:, j]
        spread = np.ptp(feature)
        colour = (feature - feature.min()) / spread if spread > 0 else np.full(feature.shape, 0.5)
        offsets = jitter.uniform(-0.25, 0.25, size=values.shape[0])
        scatter = ax.scatter(values[:, j], position + offsets, c=colour, cmap="coolwarm",
                             vmin=0, vmax=1, s=10)
    ax.set_yticks(np.arange(len(order)), [explanation.feature_names[j] for j in order])
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel("Shapley value")
    if len(order):
        ax.figure.colorbar(scatter, ax=ax, label="feature value (low to high)")
    return ax


def interactions(explanation, *, row=None, output=0, max_display=12, ax=None):
    """Heat map of pairwise interaction indices (an explanation of order 2).

    With ``row=None`` each cell is the mean over rows of the index's absolute value, off the
    diagonal, and the features are those with the largest total; with a row, the signed
    matrix of that row. The diagonal (order-one values) is left blank: it is on another scale.
    """
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
        label = f"{explanation.index}, row {row}"
    names = [str(explanation.feature_names[j]) for j in shown]
    ax.set_xticks(np.arange(len(shown)), names, rotation=90)
    ax.set_yticks(np.arange(len(shown)), names)
    ax.figure.colorbar(image, ax=ax, label=label)
    return ax
