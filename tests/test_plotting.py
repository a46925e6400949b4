import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from sklearn.svm import SVC  # noqa: E402

from pkex_select import ProductKernelExplainer, plotting  # noqa: E402


@pytest.fixture(scope="module")
def explanation():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    y = np.digitize(X[:, 0], [-0.5, 0.5])
    return ProductKernelExplainer(SVC(gamma=0.3).fit(X, y)).explain(X[:20])


def test_figures_draw_one_artist_per_feature(explanation):
    ax = plotting.bar(explanation, output="0 vs 2")
    assert len(ax.patches) == 4
    ax = plotting.waterfall(explanation, row=3, output=1, max_display=2)
    assert len(ax.patches) == 3  # two features and "2 other features"
    assert ax.get_yticklabels()[-1].get_text().startswith("2 other")
    ax = plotting.beeswarm(explanation)
    assert len(ax.collections) == 4
    ax = plotting.ranking([0.3, -0.1, 0.0], ["a", "b", "c"], pvalues=[0.01, 0.5, 0.9])
    assert [t.get_text() for t in ax.get_yticklabels()] == ["b", "c", "a"]
    assert ax.patches[-1].get_hatch() is None and ax.patches[0].get_hatch() == "//"
    matplotlib.pyplot.close("all")


@pytest.fixture(scope="module")
def xor_selector():
    from pkex_select import HSICShapleySelector

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 5))
    y = np.sign(X[:, 0] * X[:, 1])
    return HSICShapleySelector(
        n_features_to_select=2, interactions="SII", alpha=0.05, random_state=0
    ).fit(X, y)


def test_fitted_selectors_are_drawn_by_every_plot(xor_selector):
    ax = plotting.bar(xor_selector)
    assert len(ax.patches) == 5 and ax.get_xlabel() == "Shapley value of HSIC"
    assert [t.get_text() for t in ax.get_yticklabels()][-2:] in (["x0", "x1"], ["x1", "x0"])
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["adjusted p-value (maxT) <= 0.05", "adjusted p-value (maxT) > 0.05"]
    assert len(plotting.ranking(xor_selector).patches) == 5
    ax = plotting.waterfall(xor_selector)
    labels = [t.get_text() for t in ax.texts]
    assert len(labels) == 5 and all(label[0] in "+-" for label in labels)
    assert ax.get_xlabel().startswith("HSIC (0 -> ")
    ax = plotting.interactions(xor_selector)
    cells = ax.get_images()[0].get_array()
    # The XOR pair stands out: its cell is the largest off the diagonal, and signed.
    assert np.nanargmax(np.abs(cells)) in (1, 5)
    with pytest.raises(TypeError, match="one value per feature"):
        plotting.beeswarm(xor_selector)
    matplotlib.pyplot.close("all")


def test_plots_of_selectors_need_what_they_draw():
    from sklearn.exceptions import NotFittedError

    from pkex_select import HSICShapleySelector

    with pytest.raises(NotFittedError):
        plotting.bar(HSICShapleySelector())
    rng = np.random.default_rng(1)
    plain = HSICShapleySelector().fit(rng.normal(size=(40, 3)), rng.normal(size=40))
    with pytest.raises(ValueError, match="interactions='SII'"):
        plotting.interactions(plain)
    with pytest.raises(TypeError, match="got list"):
        plotting.waterfall([1, 2])


def test_waterfall_labels_every_bar_and_keeps_the_ends_off_the_frame(explanation):
    ax = plotting.waterfall(explanation, row=2)
    assert len(ax.texts) == len(ax.patches) == 4
    left, right = ax.get_xlim()
    ends = [
        edge for patch in ax.patches for edge in (patch.get_x(), patch.get_x() + patch.get_width())
    ]
    assert left < min(ends) and max(ends) < right
    matplotlib.pyplot.close("all")


def test_an_unknown_output_lists_the_outputs(explanation):
    with pytest.raises(ValueError, match=r"'cat' is not an output .* \['0 vs 1', '0 vs 2'"):
        plotting.waterfall(explanation, output="cat")
    with pytest.raises(ValueError, match="out of range for the 3 outputs"):
        plotting.bar(explanation, output=3)


def test_ranking_says_what_a_negative_value_means_in_the_papers_game():
    from pkex_select import HSICShapleySelector

    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 6))
    y = 3 * X[:, 0] + 0.3 * X[:, 1] + 0.3 * rng.normal(size=120)
    paper = HSICShapleySelector(2, value_function="baseline").fit(X, y)
    assert paper.value_function_ == "baseline" and np.any(paper.shapley_values_ < 0)
    assert "narrowing the joint kernel" in plotting.ranking(paper).get_xlabel()
    anova = HSICShapleySelector(value_function="anova").fit(X, y)
    assert "narrowing" not in plotting.ranking(anova).get_xlabel()
    matplotlib.pyplot.close("all")


def test_plots_name_what_is_wrong_with_their_arguments(explanation):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from pkex_select import HSICShapleySelector

    ax = plotting.ranking([0.3, 0.1], ["a", "b"], pvalues=[0.01, 0.5], alpha=None)
    assert all(bar.get_hatch() is None for bar in ax.patches) and ax.get_legend() is None
    np.testing.assert_allclose(
        plotting.centred_importance(explanation), plotting.centred_importance(explanation.values)
    )
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    pipe = make_pipeline(StandardScaler(), HSICShapleySelector()).fit(X, X[:, 0])
    with pytest.raises(TypeError, match=r"named_steps\['hsicshapleyselector'\]"):
        plotting.ranking(pipe)
    with pytest.raises(TypeError, match=r"not a StandardScaler; .*explain it first"):
        plotting.ranking(pipe[0])
    with pytest.raises(TypeError, match=r"not an Explanation; use plotting.bar"):
        plotting.ranking(explanation)
    with pytest.raises(TypeError, match="row must be an integer"):
        plotting.waterfall(explanation, row=1.5)
    with pytest.raises(ValueError, match="row 20 is out of range"):
        plotting.waterfall(explanation, row=20)
    matplotlib.pyplot.close("all")


def test_knockoff_plot_draws_groups_and_the_threshold():
    import pandas as pd

    from pkex_select import HSICShapleySelector

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(300, 12)), columns=[f"x{j}" for j in range(12)])
    X["x11"] = 0.99 * X["x0"] + 0.1 * rng.normal(size=300)  # grouped with x0
    y = X.iloc[:, :8].sum(axis=1) + rng.normal(size=300)
    selector = HSICShapleySelector(fdr=0.2, random_state=0).fit(X, y)
    ax = plotting.knockoffs(selector)
    assert len(ax.patches) == 11  # eleven groups
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert "x0 + x11" in labels
    hatched = [p.get_hatch() == "//" for p in ax.patches]
    assert sum(not h for h in hatched) == selector.selected_groups_.size
    with pytest.raises(ValueError, match="fit the selector with fdr"):
        plotting.knockoffs(HSICShapleySelector().fit(X, y))
    with pytest.raises(ValueError, match="draw must be in"):
        plotting.knockoffs(selector, draw=3)


def test_intervals_mark_the_attributions_the_data_support():
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel

    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    y = 2 * X[:, 0] + 0.1 * rng.normal(size=80)
    gp = GaussianProcessRegressor(ConstantKernel(1.0) * RBF([1.0, 1.0, 1.0]), alpha=0.01)
    explainer = ProductKernelExplainer(gp.fit(X, y), value_function="observational", background=X)
    explanation = explainer.explain(X[:2], return_covariance=True)
    ax = plotting.intervals(explanation, row=1, max_display=2)
    assert len(ax.get_yticklabels()) == 2 and ax.get_yticklabels()[0].get_text().startswith("x0")
    with pytest.raises(ValueError, match="return_covariance=True"):
        plotting.intervals(explainer.explain(X[:2]))
    with pytest.raises(ValueError, match="level must be between 0 and 1"):
        plotting.intervals(explanation, level=95)
