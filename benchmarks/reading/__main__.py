"""How well the command line finds a CSV file's text encoding, beside charset_normalizer.

    python -m benchmarks.reading [--out DIR]

CSV files as users save them: a header, an id, a text column (a city, from the encoding's
language in a share of the rows, else ASCII), a number and a label, in eight encodings
(UTF-8, UTF-16 with its mark, Windows-1252 and Latin-1, Windows-1251, ISO 8859-2,
Shift JIS, GBK), 5, 50 and 2000 rows, 5% and 50% of non-ASCII cells, 3 files each: 144
files. A guess is right when the file decoded with it is the text written. The command
line's rule (``_reading._text_encoding``: a byte-order mark, else UTF-8 where the head
decodes as it, else Windows-1252, else Latin-1) against charset_normalizer's best guess
(``from_path(...).best()``), a well-kept detector by character statistics.
"""

import argparse
import random
import tempfile
import time
from pathlib import Path

from benchmarks._measure import records_table, write_results

RESULTS = Path(__file__).parent / "results"

CITIES = {
    "utf-8": ["café", "東京", "Москва", "Łódź", "€"],
    "utf-16": ["café", "東京", "Москва"],
    "cp1252": ["café", "Müller", "naïve", "façade", "Zürich", "€uro", "São Paulo"],
    "latin-1": ["café", "Müller", "naïve", "façade", "Zürich", "São Paulo"],
    "cp1251": ["Москва", "Привет", "данные", "цена", "город"],
    "iso-8859-2": ["Łódź", "Kraków", "Gdańsk", "żółw", "Poznań"],
    "shift_jis": ["東京", "大阪", "データ", "価格", "名古屋"],
    "gbk": ["北京", "上海", "数据", "价格", "广州"],
}


def files(folder, rng):
    """(encoding, path, text) for every file of the design."""
    for encoding, cities in CITIES.items():
        for rows in (5, 50, 2000):
            for share in (0.05, 0.5):
                for repetition in range(3):
                    lines = ["id,city,price,y"]
                    for i in range(rows):
                        local = rng.random() < share
                        city = rng.choice(cities if local else ["Paris", "Berlin", "Rome"])
                        lines.append(f"{i},{city},{rng.random():.3f},{rng.randint(0, 1)}")
                    text = "\n".join(lines) + "\n"
                    path = folder / f"{encoding}-{rows}-{share}-{repetition}.csv"
                    path.write_bytes(text.encode(encoding))
                    yield encoding, path, text


def guesses():
    import charset_normalizer

    from pkex_select._reading import UsageError, _text_encoding

    def ours(path):
        try:
            return _text_encoding(str(path))
        except UsageError:
            return None

    def detector(path):
        best = charset_normalizer.from_path(path).best()
        return best.encoding if best else None

    return {"pkex-select": ours, f"charset_normalizer {charset_normalizer.__version__}": detector}


def right(path, encoding, text):
    try:
        return encoding is not None and path.read_bytes().decode(encoding).lstrip("\ufeff") == text
    except (LookupError, UnicodeDecodeError):
        return False


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    methods = guesses()
    found = {name: {encoding: 0 for encoding in CITIES} for name in methods}
    seconds = dict.fromkeys(methods, 0.0)
    with tempfile.TemporaryDirectory() as folder:
        design = list(files(Path(folder), random.Random(0)))
        for encoding, path, text in design:
            for name, guess in methods.items():
                start = time.perf_counter()
                found[name][encoding] += right(path, guess(path), text)
                seconds[name] += time.perf_counter() - start
    per_encoding = len(design) // len(CITIES)
    records = [
        {
            "method": name,
            **{encoding: f"{count}/{per_encoding}" for encoding, count in counts.items()},
            "all": f"{sum(counts.values())}/{len(design)}",
            "seconds": round(seconds[name], 2),
        }
        for name, counts in found.items()
    ]
    write_results(
        args.out,
        "encodings",
        records,
        "Finding a CSV file's encoding",
        f"`python -m benchmarks.reading`: {len(design)} files, {per_encoding} per encoding "
        "(see the module's docstring); a guess is right when the file decoded with it is the "
        "text written.",
        records_table(records),
    )


if __name__ == "__main__":
    main()
