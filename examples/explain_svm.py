"""Explain a fitted RBF support-vector regressor, exactly, point by point.

    python examples/explain_svm.py [--plot explain_svm.png]

Fits an SVR on the diabetes data that ships with scikit-learn, explains 100 test rows, checks
that each row's values add up to the prediction, prints the global importance (mean |value|)
and, with --plot, draws bar, waterfall and beeswarm figures (needs matplotlib).
"""

import argparse
import time

import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVR

from pkex_select import ProductKernelExplainer


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plot", metavar="PNG", help="save bar, waterfall and beeswarm plots")
    args = parser.parse_args(argv)

    X, y = load_diabetes(return_X_y=True, as_frame=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    model = make_pipeline(StandardScaler(), SVR(C=30.0, gamma=0.02)).fit(X_train, y_train)

    start = time.perf_counter()
    explanation = ProductKernelExplainer(model).explain(X_test.iloc[:100])
    seconds = time.perf_counter() - start
    output = explanation.values.sum(axis=1) + explanation.base_values
    gap = output - model.predict(X_test.iloc[:100])
    print(f"Explained 100 rows x {X.shape[1]} features against "
          f"{model[-1].support_vectors_.shape[0]} support vectors in {seconds:.3f} s; "
          f"largest efficiency gap {np.abs(gap).max():.1e}.")

    importance = np.abs(explanation.values).mean(axis=0)
    print("\nMean |Shapley value| (the model's units, disease progression):")
    for j in np.argsort(importance)[::-1]:
        bar = "#" * int(round(40 * importance[j] / importance.max()))
        print(f"  {explanation.feature_names[j]:>4}  {importance[j]:7.2f}  {bar}")

    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from pkex_select import plotting

        fig, axes = plt.subplots(1, 3, figsize=(16, 5))
        plotting.bar(explanation, ax=axes[0])
        plotting.waterfall(explanation, row=0, ax=axes[1])
        plotting.beeswarm(explanation, ax=axes[2])
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)
        print(f"\nSaved {args.plot}")


if __name__ == "__main__":
    main()
