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
