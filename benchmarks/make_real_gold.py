"""Gold files from real, labelled records, so the shipped claims can be measured on data nobody here wrote.

    .venv/bin/python benchmarks/make_real_gold.py --textmine DIR --sroie DIR [--out examples/gold/real]

DIR is a checkout (or `git archive`) of Emvista/Challenge_TextMine_2023 and of zzzDavid/ICDAR-2019-SROIE.
The hand-written gold in examples/gold was written while the pipeline was built and is named in docs
and tests, so it is a development set; these files are not.

Held-out records are never read: TextMine's JDA.json and JDA-labeled.json are not opened, and every
SROIE receipt whose key file is listed in ../shared/heldout-ids.txt is left out by its name (key, box
and image alike) before any file is read (`--heldout`).

**TextMine 2023 (JDR.json, JDF.json) -> `contact`.** Each record is a signature with token-level
annotations {form, label, begin, end}. Tokens of one label separated only by spaces (or nothing, as
"L" "'" "Heureux") form one entity, its value the text from the first token's start to the last one's
end, so it is a span of the text as written (spaces around it trimmed: JDF labels "+330 146 876 863 "
with its trailing space). Labels map as: Human -> name, Email -> email,
Phone_Number -> phone, Organization -> organization; Function, Project, Location, the Reference_*
labels, Url and Social_Network have no field and are ignored. Where a field's label marks several
entities (two phones, a mobile and a fax, an organization and its department) the first in the text
is the gold: one rule for every record, the one a reader of the signature would take. A record that
names several persons is dropped, not mapped: `contact` holds one person and the labels do not say
whose e-mail or phone each is. A label the text lacks is null (an empty signature is all null).
A record is also dropped when a value does not fit the schema (a phone outside its pattern, a value
over maxLength) or when the project's judge, given the gold as a perfect model's answer, does not
keep every value (a value the judge cannot find in the text would score a right answer as wrong).
Nothing is nulled out or rewritten: a record is mapped whole or dropped, and the drops are counted.

**TextMine 2023 (JDR.json) -> examples/schemas/email_signature.schema.json.** A schema Formwork has
never seen, written as a user would bring it (a file, not a built-in), to measure what a user's own
audited rows certify. The same records, entities and rules as `contact` (first entity per field,
several persons dropped, judge check), ids as in contact_textmine_jdr.jsonl; its six fields are the
six person-level labels JDR marks: Human -> full_name, Function -> job_title, Organization ->
organization, Email -> email, Phone_Number -> phone, Url -> website. Its phone has no pattern (a user
writes "+ 33 01 ..." too), so the records `contact` drops for that pattern are kept here.

**SROIE 2019 (data/key, data/box) -> `shop_receipt`.** The text is the OCR lines of data/box/N.csv
(the transcript after each box's eight coordinates) joined by newlines in reading order (rows top
to bottom, left to right within a row; see `box_text`). company and address are the key's strings
as written. date is the key's date as ISO 8601, read year first where it starts with a four-digit
year (2018-03-23, 20180304) and day first otherwise (Malaysian receipts write DD/MM/YYYY); a date
that reads neither way (12/28/2017, OCT 3, 2016) is dropped, never guessed. total is the key's total
as a number (a leading RM or $ and thousands commas removed). A missing key is null. The same judge
check drops a receipt whose values it does not keep.

Per source file the script prints records written and records dropped, by reason; the counts go into
examples/gold/real/README.md.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from formwork.schemas.registry import Schema, load_schema
from formwork.tasks.engines.base import Completion
from formwork.tasks.validate import judge

ROOT = Path(__file__).resolve().parents[1]
HELDOUT = ROOT.parent / "shared" / "heldout-ids.txt"
FIELDS = {"Human": "name", "Email": "email", "Phone_Number": "phone", "Organization": "organization"}
TEXTMINE_FILES = {"JDR.json": "contact_textmine_jdr.jsonl", "JDF.json": "contact_textmine_jdf.jsonl"}
SIGNATURE_SCHEMA = ROOT / "examples" / "schemas" / "email_signature.schema.json"
SIGNATURE_FIELDS = {
    "Human": "full_name",
    "Function": "job_title",
    "Organization": "organization",
    "Email": "email",
    "Phone_Number": "phone",
    "Url": "website",
}
MONTH_NAMES = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
MONTHS = {name: number for number, name in enumerate(MONTH_NAMES, start=1)}


@dataclass(frozen=True)
class Converted:
    """One record's gold, or the reason it was dropped."""

    id: str
    text: str
    gold: dict[str, Any] | None
    meta: dict[str, Any]
    dropped: str | None = None

    def line(self) -> str:
        row = {"id": self.id, "text": self.text, "gold": self.gold, "meta": self.meta}
        return json.dumps(row, ensure_ascii=False)


def entities(text: str, annotations: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(label, value) per entity, in text order: same-label tokens apart only by spaces join."""
    found: list[tuple[str, int, int]] = []
    for token in sorted(annotations, key=lambda a: a["begin"]):
        label, begin, end = token["label"], token["begin"], token["end"]
        if found and found[-1][0] == label and not text[found[-1][2] : begin].strip(" "):
            found[-1] = (label, found[-1][1], end)
        else:
            found.append((label, begin, end))
    return [(label, text[begin:end].strip()) for label, begin, end in found]


def textmine_gold(
    text: str, annotations: list[dict[str, Any]], fields: dict[str, str]
) -> tuple[dict[str, Any] | None, str | None]:
    """One TextMine record's gold under `fields` (label -> field; the first entity per field), or why it
    is dropped: both schemas hold one person, so a record naming several is dropped for both."""
    spans = entities(text, annotations)
    persons = {value for label, value in spans if label == "Human"}
    if len(persons) > 1:
        return None, "several persons"
    gold: dict[str, Any] = dict.fromkeys(fields.values())
    for label, value in spans:
        key = fields.get(label)
        if key and gold[key] is None:
            gold[key] = value
    return gold, None


def receipt_date(written: str) -> str | None:
    """A SROIE date as ISO 8601, day first; None where it does not read as one."""
    written = written.strip(" ()").upper()
    year_first = re.fullmatch(r"(\d{4})[/\-]?(\d{2})[/\-]?(\d{2})", written)
    numeric = re.fullmatch(r"(\d{1,2})[/.\-](\d{1,2})[/.\-](\d{2}|\d{4})", written)
    named = re.fullmatch(r"(\d{1,2})[ \-/]?([A-Z]{3})[A-Z]*[ \-/,]*(\d{2}|\d{4})", written)
    if year_first:
        year, month, day = year_first[1], int(year_first[2]), int(year_first[3])
    elif numeric:
        day, month, year = int(numeric[1]), int(numeric[2]), numeric[3]
    elif named and named[2] in MONTHS:
        day, month, year = int(named[1]), MONTHS[named[2]], named[3]
    else:
        return None
    try:
        return date(int(year) + (2000 if len(year) == 2 else 0), month, day).isoformat()
    except ValueError:
        return None


def receipt_total(written: str) -> float | None:
    """A SROIE total as a plain number; None where it is not one."""
    plain = re.sub(r"^(RM|\$)\s*", "", written.strip().upper()).replace(",", "")
    return float(plain) if re.fullmatch(r"\d+(\.\d+)?", plain) else None


def receipt_gold(key: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """The `shop_receipt` gold of one SROIE key, or why it is dropped."""
    gold: dict[str, Any] = {
        "company": key.get("company") or None,
        "date": None,
        "address": key.get("address") or None,
        "total": None,
    }
    if key.get("date"):
        gold["date"] = receipt_date(key["date"])
        if gold["date"] is None:
            return None, "date not read"
    if key.get("total"):
        gold["total"] = receipt_total(key["total"])
        if gold["total"] is None:
            return None, "total not a number"
    return gold, None


def box_text(csv: str) -> str:
    """The OCR lines of a data/box file in reading order: rows top to bottom, left to right in a row.

    The file lists most boxes top to bottom, but lines the annotators added later come at its end (a
    total after "PLEASE COME AGAIN !"), so the boxes are sorted: by vertical centre, a box joining the
    row whose first box's centre is within half that box's height, then by left edge."""
    boxes: list[tuple[float, float, float, str]] = []  # centre y, half height, left x, transcript
    for parts in (row.split(",", 8) for row in csv.splitlines()):
        if len(parts) == 9 and parts[8].strip():
            ys = [int(v) for v in parts[1:8:2]]
            xs = [int(v) for v in parts[0:8:2]]
            boxes.append(((min(ys) + max(ys)) / 2, (max(ys) - min(ys)) / 2, min(xs), parts[8].strip()))
    rows: list[list[tuple[float, float, float, str]]] = []
    for box in sorted(boxes):
        if rows and box[0] - rows[-1][0][0] <= rows[-1][0][1]:
            rows[-1].append(box)
        else:
            rows.append([box])
    return "\n".join(box[3] for row in rows for box in sorted(row, key=lambda b: b[2]))


def kept_by_judge(schema: Schema, text: str, gold: dict[str, Any]) -> str | None:
    """None when the judge, given `gold` as a perfect model's answer, keeps every value; else why not."""
    errors = list(schema.validator.iter_errors(gold))
    if errors:
        return "does not fit the schema"
    notes = Completion("notes", "stop", 1, 1, 0.0, "perfect")
    written = json.dumps(gold, ensure_ascii=False)
    answer = Completion(written, "stop", 1, 1, 0.0, "perfect", ((written, 0.0),))
    verdict = judge(schema, text, notes, answer)
    if verdict.data is None or any(verdict.data.get(k) != v for k, v in gold.items() if v is not None):
        return "judge does not keep a value"
    return None


def heldout_receipts(path: Path) -> set[str]:
    """The SROIE receipt numbers listed in heldout-ids.txt (from `data/key/N.json` lines), by name."""
    return set(re.findall(r"^data/key/(\d+)\.json$", path.read_text(encoding="utf-8"), re.M))


def textmine(folder: Path, name: str, schema: Schema, fields: dict[str, str] = FIELDS) -> Iterator[Converted]:
    """Every record of TextMine's `name` (JDR.json or JDF.json, never JDA), converted or dropped."""
    if name not in TEXTMINE_FILES:  # by name, before anything is read: JDA files are held out
        raise ValueError(f"{name} is not one of {sorted(TEXTMINE_FILES)}")
    stem = name.removesuffix(".json").lower()
    for record in json.loads((folder / name).read_text(encoding="utf-8")):
        text = record["text"]
        key = f"{stem}-{record['identifier']}"
        meta = {"source": f"Emvista/Challenge_TextMine_2023 {name}", "identifier": record["identifier"]}
        gold, dropped = textmine_gold(text, record["annotations"], fields)
        if gold is not None:
            dropped = kept_by_judge(schema, text, gold)
        yield Converted(key, text, gold, meta, dropped)


def sroie(folder: Path, schema: Schema, heldout: set[str]) -> Iterator[Converted]:
    """Every SROIE receipt not held out, converted or dropped; held-out ones are skipped by name."""
    for key_path in sorted((folder / "data" / "key").glob("*.json")):
        number = key_path.stem
        if number in heldout:
            continue
        box = folder / "data" / "box" / f"{number}.csv"
        text = box_text(box.read_text(encoding="utf-8", errors="replace"))
        meta = {"source": "zzzDavid/ICDAR-2019-SROIE data/key + data/box", "receipt": number}
        gold, dropped = receipt_gold(json.loads(key_path.read_text(encoding="utf-8")))
        if gold is not None:
            dropped = kept_by_judge(schema, text, gold)
        yield Converted(f"sroie-{number}", text, gold, meta, dropped)


def write(path: Path, converted: Iterator[Converted]) -> None:
    """Write the kept records to `path` and print what was kept and dropped, by reason."""
    reasons: Counter[str] = Counter()
    kept: list[str] = []
    for record in converted:
        if record.dropped:
            reasons[record.dropped] += 1
        else:
            kept.append(record.line())
    path.write_text("\n".join(kept) + "\n", encoding="utf-8")
    print(f"{path.name}: {len(kept)} written, {sum(reasons.values())} dropped {dict(reasons)}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--textmine", type=Path, required=True, help="Emvista/Challenge_TextMine_2023")
    parser.add_argument("--sroie", type=Path, required=True, help="zzzDavid/ICDAR-2019-SROIE")
    parser.add_argument("--heldout", type=Path, default=HELDOUT, help="the held-out list")
    parser.add_argument("--out", type=Path, default=ROOT / "examples" / "gold" / "real")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    contact = load_schema("contact")
    for name, target in TEXTMINE_FILES.items():
        write(args.out / target, textmine(args.textmine, name, contact))
    signature = load_schema(SIGNATURE_SCHEMA)
    write(
        args.out / "signature_textmine_jdr.jsonl",
        textmine(args.textmine, "JDR.json", signature, SIGNATURE_FIELDS),
    )
    receipts = sroie(args.sroie, load_schema("shop_receipt"), heldout_receipts(args.heldout))
    write(args.out / "shop_receipt_sroie.jsonl", receipts)


if __name__ == "__main__":
    main()
