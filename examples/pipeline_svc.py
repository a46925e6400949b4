"""HSIC Shapley feature selection inside a tuned scikit-learn pipeline.

    python examples/pipeline_svc.py

Pipeline([HSICShapleySelector(), StandardScaler(), SVC()]) on the Wisconsin breast-cancer
data, tuned by GridSearchCV over the number of selected features and the SVM's C; the
selection is refitted inside every cross-validation fold, so the score is honest.
"""

from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from pkex_select import HSICShapleySelector


def main():
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, stratify=y, random_state=0)
    pipeline = Pipeline([
        ("select", HSICShapleySelector()),
        ("scale", StandardScaler()),
        ("svc", SVC()),
    ]).set_output(transform="pandas")
    grid = {"select__n_features_to_select": [2, 4, 6, 10, 30], "svc__C": [0.1, 1.0, 10.0]}
    search = GridSearchCV(pipeline, grid, cv=5, n_jobs=1).fit(X_train, y_train)

    results = search.cv_results_
    print("features kept -> best cross-validated accuracy (over C):")
    for k in grid["select__n_features_to_select"]:
        scores = [score for score, params in zip(results["mean_test_score"], results["params"])
                  if params["select__n_features_to_select"] == k]
        print(f"  {k:>2} -> {max(scores):.3f}")
    print(f"best parameters: {search.best_params_}")
    print(f"cross-validated accuracy: {search.best_score_:.3f}")
    print(f"held-out accuracy:        {search.score(X_test, y_test):.3f}")
    selector = search.best_estimator_.named_steps["select"]
    print(f"selected features ({len(selector.get_feature_names_out())}):",
          ", ".join(selector.get_feature_names_out()[:10]),
          "..." if len(selector.get_feature_names_out()) > 10 else "")


if __name__ == "__main__":
    main()
