"""The seven data sets of the published feature-selection table, from checksummed raw files.

The raw UCI files live in ``benchmarks/data`` exactly as published (gzip-compressed), with
their provenance, citations and licences in ``benchmarks/data/SOURCES.md``. Every load checks
the SHA-256 of the uncompressed bytes against ``MANIFEST.sha256`` and then builds the version
the published table used (its sizes are in SOURCES.md, "Note on the regression benchmarks").
Nothing is downloaded.
"""

import gzip
import hashlib
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

DATA = Path(__file__).resolve().parents[1] / "data"
KEYS = ("sonar", "wisconsin", "ionosphere", "breast_cancer", "skillcraft", "sml", "parkinson")


@dataclass
class Dataset:
    key: str
    X: pd.DataFrame
    y: pd.Series
    task: str  # "classification" or "regression"
    description: str


def _manifest():
    lines = (DATA / "MANIFEST.sha256").read_text().split("\n")
    return {name: digest for digest, name in (line.split() for line in lines if line.strip())}


def raw_bytes(name):
    """The uncompressed bytes of a raw file, after checking its SHA-256."""
    data = gzip.decompress((DATA / f"{name}.gz").read_bytes())
    expected = _manifest()[name]
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise ValueError(f"{name}: SHA-256 {actual} does not match the manifest ({expected}).")
    return data


def _csv(name, **kwargs):
    return pd.read_csv(io.BytesIO(raw_bytes(name)), **kwargs)


def _labelled(key, name, n_features, positive, description):
    frame = _csv(name, header=None)
    X = frame.iloc[:, :n_features].astype(float)
    X.columns = [f"x{j}" for j in range(n_features)]
    y = (frame.iloc[:, n_features] == positive).astype(int).rename("label")
    return Dataset(key, X, y, "classification", description)


def sonar():
    return _labelled("sonar", "sonar.all-data", 60, "M", "208 x 60, mine (1) vs rock (0)")


def ionosphere():
    return _labelled("ionosphere", "ionosphere.data", 34, "g", "351 x 34, good (1) vs bad (0)")


def wisconsin():
    frame = _csv("wdbc.data", header=None)
    X = frame.iloc[:, 2:].astype(float)
    X.columns = [f"x{j}" for j in range(X.shape[1])]
    y = (frame.iloc[:, 1] == "M").astype(int).rename("malignant")
    return Dataset("wisconsin", X, y, "classification", "569 x 30, malignant (1) vs benign")


def breast_cancer():
    """WPBC regression: target ``time``; rows with a missing lymph-node status removed."""
    frame = _csv("wpbc.data", header=None, na_values="?")
    frame = frame[frame.iloc[:, 34].notna()]
    y = frame.iloc[:, 2].astype(float).rename("time")
    X = pd.concat(
        [frame.iloc[:, [0]], (frame.iloc[:, 1] == "R").astype(int), frame.iloc[:, 3:34]], axis=1
    ).astype(float)
    X.columns = ["id", "recurred"] + [f"x{j}" for j in range(30)] + ["tumor_size"]
    return Dataset(
        "breast_cancer",
        X.reset_index(drop=True),
        y.reset_index(drop=True),
        "regression",
        "194 x 33, target time (months)",
    )


def skillcraft():
    """SkillCraft1: complete rows, target log(GapBetweenPACs), the 19 other columns as inputs."""
    frame = _csv("SkillCraft1_Dataset.csv", na_values="?").dropna().astype(float)
    y = np.log(frame.pop("GapBetweenPACs")).rename("log_GapBetweenPACs")
    return Dataset(
        "skillcraft",
        frame.reset_index(drop=True),
        y.reset_index(drop=True),
        "regression",
        "3338 x 19, target log(GapBetweenPACs)",
    )


def sml():
    """SML2010: both files, target room humidity; 5 date/time columns and 21 sensors as inputs."""
    frames = []
    for name in ("NEW-DATA-1.T15.txt", "NEW-DATA-2.T15.txt"):
        text = raw_bytes(name).decode()
        header = text.split("\n", 1)[0].lstrip("#").split()
        columns = [field.split(":", 1)[1] for field in header]
        frames.append(
            pd.read_csv(io.StringIO(text), sep=r"\s+", comment="#", header=None, names=columns)
        )
    frame = pd.concat(frames, ignore_index=True)
    stamp = pd.to_datetime(frame.pop("Date") + " " + frame.pop("Time"), format="%d/%m/%Y %H:%M")
    y = frame.pop("Humedad_Habitacion_Sensor").astype(float)
    dates = pd.DataFrame(
        {
            "year": stamp.dt.year,
            "month": stamp.dt.month,
            "day": stamp.dt.day,
            "hour": stamp.dt.hour,
            "minute": stamp.dt.minute,
        }
    )
    X = pd.concat([dates, frame], axis=1).astype(float)
    return Dataset("sml", X, y, "regression", "4137 x 26, target room humidity")


def parkinson():
    """Parkinsons telemonitoring: target total_UPDRS, motor_UPDRS dropped."""
    frame = _csv("parkinsons_updrs.data").astype(float)
    y = frame.pop("total_UPDRS")
    frame = frame.drop(columns="motor_UPDRS")
    return Dataset("parkinson", frame, y, "regression", "5875 x 20, target total_UPDRS")


# Data sets whose rows come in groups, and the column that names the group: parkinson's
# 5875 rows are 2501 recording sessions of 42 subjects, and rows of one session share
# subject#, test_time and the target, so a shuffled K-fold puts copies of a test row in the
# training part (see the benchmark page).
GROUPS = {"parkinson": "subject#"}

LOADERS = {
    "sonar": sonar,
    "wisconsin": wisconsin,
    "ionosphere": ionosphere,
    "breast_cancer": breast_cancer,
    "skillcraft": skillcraft,
    "sml": sml,
    "parkinson": parkinson,
}


def load(key):
    """Load a data set by its key (see ``KEYS``)."""
    if key not in LOADERS:
        raise ValueError(f"unknown data set {key!r}; choose from {', '.join(KEYS)}")
    return LOADERS[key]()
