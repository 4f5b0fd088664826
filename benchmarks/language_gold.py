"""How well the record-language detector (tasks/grounding/language.py) names the gold texts' languages,
and what it costs per record.

    .venv/bin/python benchmarks/language_gold.py

Every gold record of examples/gold/ whose text has Latin letters (the others are never classified):
its language is the gold meta's `lang`, or English where the meta names none (the unlabelled records
are English). Reported: the share whose first detected language is right, the share where the
languages the number-word reader reads include the right one, the records missed, the model's load
time, and the detection's cost per record (uncached, the median and the 95th percentile of 5 passes);
then the number-word reader's cost per record, in all eight languages (as before) and in the detected
ones, detection included (5 passes over every gold text, mean per record).
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from formwork.tasks.grounding.language import LATIN, _identifier, languages
from formwork.tasks.grounding.numerals import WORD_LANGUAGES, word_readings

GOLD = Path(__file__).resolve().parents[1] / "examples" / "gold"


def main() -> None:
    records = []
    for path in sorted(GOLD.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if LATIN.search(record["text"]):
                records.append((record["id"], record["text"], (record.get("meta") or {}).get("lang") or "en"))
    started = time.perf_counter()
    _identifier()
    load_s = time.perf_counter() - started
    first = read = 0
    missed = []
    for key, text, lang in records:
        found = languages(text)
        first += found[0] == lang
        read += lang in found
        if lang not in found:
            missed.append(f"{key} ({lang}): {found} {text[:60]!r}")
    costs = []
    for _ in range(5):
        for _, text, _ in records:
            languages.cache_clear()
            started = time.perf_counter()
            languages(text)
            costs.append((time.perf_counter() - started) * 1000)
    costs.sort()
    n = len(records)
    print(f"records with Latin letters: {n}")
    print(f"first language right: {first}/{n} ({first / n:.1%}); right one read: {read}/{n} ({read / n:.1%})")
    print(f"model load: {load_s:.2f} s; per record: median {statistics.median(costs):.3f} ms, "
          f"p95 {costs[int(len(costs) * 0.95)]:.3f} ms")  # fmt: skip
    for line in missed:
        print("missed:", line)
    files = sorted(GOLD.glob("*.jsonl"))
    texts = [json.loads(line)["text"] for path in files for line in path.open(encoding="utf-8")]
    for label, wanted in (("all eight languages", WORD_LANGUAGES), ("detected languages", None)):
        started = time.perf_counter()
        for _ in range(5):
            languages.cache_clear()
            for text in texts:
                word_readings(text, wanted)
        per = (time.perf_counter() - started) * 1000 / (5 * len(texts))
        print(f"number words, {label}: {per:.3f} ms per record ({len(texts)} texts)")


if __name__ == "__main__":
    main()
