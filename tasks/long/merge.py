"""Merge the rows of a long text's parts into one row, deterministically, and say what could not merge.

Each part was judged on its own text (tasks/long/partwise.py); here its evidence is moved to where it
stands in the whole text, and the parts' values are combined by each field's role (schemas/roles.py):
- items: every part's items in order of first appearance, less the copies of a kept one
  (tasks/long/duplicates.py; each kept item absorbs one copy per part, so two equal lines stay two),
  whose values fill the kept one's empty fields, with their evidence (a field both state with values
  that differ is nulled and named: two readings of one item that disagree);
- header: the value every part that states it agrees on; parts that disagree make a conflict: the
  field is nulled and listed with what each part said (the row `partial`, or `failed` where the field
  is critical), never a silent pick. A part that does not state it is not a disagreement, nor is one
  whose number stands only on lines that hold its own items' values (`_borrowed`: a price as the total).
A part's refusals stay the merged row's (the part named after each, item paths as the merged row
numbers them), except those about a header field another part stated or an item copy dropped; a
failed part makes the row `partial` at best (its items are missing). The merged row is then judged
against the user's own schema, as any row is, and checked for what it may leave out
(tasks/long/completeness.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from formwork.schemas.paths import Path, parse_path
from formwork.schemas.registry import Schema
from formwork.schemas.roles import Roles
from formwork.tasks.confidence.probability import value_paths
from formwork.tasks.long.completeness import INCOMPLETE, completeness_problems
from formwork.tasks.long.duplicates import clashes, fill, same_key, within
from formwork.tasks.long.parts import Piece
from formwork.tasks.validate import EMPTY_ROW, Verdict, as_written, field_errors, null_failures

ITEM_PATH = re.compile(r"^([^.\[\]]+)\[(\d+)\](.*)$")
LEADING_ITEM = re.compile(r"^([^.\[\]\s:]+)\[(\d+)\]")  # the item path a judge's sentence begins with


@dataclass(frozen=True)
class Merged:
    """The merged verdict, and what the merge measured: duplicates dropped, fields in conflict."""

    verdict: Verdict
    duplicates: int
    conflicts: tuple[str, ...]


def _about(message: str, name: str) -> bool:
    return message.startswith((f"{name} ", f"{name}:", f"{name}.", f"{name}["))


def _shift(row: dict[str, Any], part: Piece, index: int, path: str) -> dict[str, Any]:
    spans = [[part.to_whole(s), part.to_whole(max(s, e - 1)) + 1] for s, e in row.get("spans") or []]
    return {**row, "path": path, "spans": spans, "part": index + 1}


def _borrowed(verdict: Verdict, text: str, name: str, items: tuple[str, ...]) -> bool:
    """Whether a part's header number `name` is written only on lines that hold its own items'
    values: an item's number, not a header the part states (a 1.5B model gave a part with no total
    the total 57.9 of its line "Hose clip #37 | 3 | 57.90"). A total on a line of its own stays, even
    one equal to an item's price. `text` is the part's own text (its spans' frame)."""
    value = (verdict.data or {}).get(name)
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False  # a name may well be a header and an item's (the sender who signs): numbers only
    spans = next((row["spans"] for row in verdict.evidence if row["path"] == name and row.get("spans")), None)
    if not spans:
        return False

    def line(at: int) -> int:
        return text.count("\n", 0, at)

    item_lines = {
        line(start) for row in verdict.evidence
        if (m := ITEM_PATH.match(row["path"])) and m[1] in items for start, _ in row.get("spans") or []
    }  # fmt: skip
    return all(line(start) in item_lines for start, _ in spans)


class _Merge:
    """One merge: the parts' verdicts, and the merged row's pieces as they are gathered."""

    def __init__(
        self, schema: Schema, roles: Roles, source: str, parts: list[tuple[Piece, Verdict]], names: list[str]
    ):
        self.schema, self.roles, self.source, self.parts, self.names = schema, roles, source, parts, names
        # a failed part's values are never stored (as for any failed row): only the others merge
        self.usable = [(i, part, v) for i, (part, v) in enumerate(parts) if v.status != "failed"]
        self.data: dict[str, Any] = {}
        self.rows: list[dict[str, Any]] = []
        self.values: list[dict[str, Any]] = []
        self.messages: list[str] = []
        self.nulled: list[str] = []
        self.duplicates = 0
        self.conflicts: list[str] = []
        self.clashed: list[tuple[str, str]] = []  # (an item field's path, why): two readings disagree
        self.stated: set[str] = set()  # header fields some part stated and all agreed on
        self.renamed: dict[tuple[int, str], dict[int, int]] = {}  # (part, items field): part index -> merged
        self.borrowed: set[tuple[int, str]] = set()  # (part, header field): an item's value (_borrowed)

    def label(self, index: int) -> str:
        part = self.parts[index][0]
        return f"{self.names[index]} (characters {part.start}-{part.end})"

    def overlap(self, earlier: int, later: int) -> tuple[int, int]:
        """The stretch of the whole text both parts read (empty when they do not overlap)."""
        return self.parts[later][0].start, self.parts[earlier][0].end

    def items(self, name: str) -> None:
        kept: list[tuple[int, Any, dict[str, list[list[int]]]]] = []
        absorbed: set[tuple[int, int]] = set()
        for index, part, verdict in self.usable:
            found = (verdict.data or {}).get(name)
            renamed: dict[int, int] = {}
            filled: dict[int, tuple[int, set[str]]] = {}  # a copy's index -> (the kept one, fields it filled)
            for j, item in enumerate(found if isinstance(found, list) else []):
                spans: dict[str, list[list[int]]] = {}
                for row in verdict.evidence:
                    matched = ITEM_PATH.match(row["path"])
                    if matched and matched[1] == name and int(matched[2]) == j:
                        spans.setdefault(matched[3], []).extend(_shift(row, part, index, "")["spans"])
                same = [
                    k for k, (other, value, quoted) in enumerate(kept)
                    if other != index and (k, index) not in absorbed
                    and (same_key(item, value, self.roles.keys.get(name, ()))
                         or (item == value and within(spans, self.overlap(other, index))
                             and within(quoted, self.overlap(other, index))))
                ]  # fmt: skip
                if same:
                    self.duplicates += 1
                    absorbed.add((same[0], index))  # one copy per part: two equal lines stay two
                    for field in sorted(clashes(kept[same[0]][1], item)):
                        self.clash(f"{name}[{same[0]}]", field, kept[same[0]], index, item[field])
                    filled[j] = (same[0], fill(kept[same[0]][1], item))  # what the copy adds
                    continue
                renamed[j] = len(kept)
                kept.append((index, dict(item) if isinstance(item, dict) else item, spans))
            self.renamed[(index, name)] = renamed
            for source, target in ((verdict.evidence, self.rows), (verdict.values, self.values)):
                for row in source:
                    matched = ITEM_PATH.match(row["path"])
                    if not matched or matched[1] != name:
                        continue
                    j, rest = int(matched[2]), matched[3]
                    field = rest[1:].split(".")[0].split("[")[0]
                    if j in renamed:
                        path = f"{name}[{renamed[j]}]{rest}"
                    elif j in filled and field in filled[j][1]:
                        path = f"{name}[{filled[j][0]}]{rest}"
                        target[:] = [r for r in target if r["path"] != path]  # the kept one's null
                    else:
                        continue
                    shifted = _shift(row, part, index, path)
                    target.append(shifted if "spans" in row else {**row, "path": path, "part": index + 1})
            gaps = {f"{name}[{k}].{field}" for k, fields in filled.values() for field in fields}
            self.nulled = [path for path in self.nulled if path not in gaps]
            self.nulled += [
                f"{name}[{renamed[int(m[2])]}]{m[3]}"
                for path in verdict.nulled
                if (m := ITEM_PATH.match(path)) and m[1] == name and int(m[2]) in renamed
            ]
        self.data[name] = [item for _, item, _ in kept]

    def clash(self, item: str, field: str, kept: tuple[int, Any, Any], index: int, value: Any) -> None:
        """Two readings of one item give its `field` two values: it is nulled, saying both."""
        path = f"{item}.{field}"
        shown = f"{self.names[kept[0]]} says {json.dumps(kept[1][field], ensure_ascii=False)}; " + (
            f"{self.names[index]} says {json.dumps(value, ensure_ascii=False)}"
        )
        self.clashed.append((path, f"{path}: two readings of one item disagree ({shown}); nulled"))

    def header(self, name: str) -> None:
        said = [
            (index, verdict.data[name]) for index, _, verdict in self.usable
            if isinstance(verdict.data, dict) and verdict.data.get(name) is not None
        ]  # fmt: skip
        lent = {
            index for index, _ in said
            if _borrowed(self.parts[index][1], self.parts[index][0].text(self.source), name, self.roles.items)
        }  # fmt: skip
        self.borrowed |= {(index, name) for index in lent}
        said = [(index, value) for index, value in said if index not in lent]
        distinct = {json.dumps(value, sort_keys=True, ensure_ascii=False) for _, value in said}
        self.data[name] = None
        if len(distinct) == 1:
            self.data[name] = said[0][1]
            self.stated.add(name)
        elif len(distinct) > 1:
            shown = "; ".join(f"{self.names[i]} says {json.dumps(v, ensure_ascii=False)}" for i, v in said)
            self.conflicts.append(name)
            self.messages.append(f"{name}: the parts disagree ({shown}); nulled, as no part outranks another")
        for index, part, verdict in self.usable:
            if index in lent:
                continue  # an item's value, said there: not this field's
            for row in verdict.evidence:
                if row["path"] == name and (name not in self.stated or row["value"] == self.data[name]):
                    self.rows.append(_shift(row, part, index, name))
            for entry in verdict.values:
                if entry["path"] != name:
                    continue
                if name in self.conflicts:
                    entry = {**entry, "verdict": "refused"}
                elif name in self.stated and entry["value"] != self.data[name]:
                    continue  # a part that did not state it, or stated it and was refused: not this row's
                self.values.append({**entry, "part": index + 1})
            if name not in self.stated:
                self.nulled += [path for path in verdict.nulled if path == name]

    def part_messages(self) -> None:
        for index, (_, verdict) in enumerate(self.parts):
            if verdict.status == "failed":
                reasons = "; ".join(verdict.errors)
                self.messages.append(
                    f"{INCOMPLETE} {self.label(index)} failed, so what it holds is missing: {reasons}"
                )
                continue
            for message in verdict.errors:
                if message.startswith(EMPTY_ROW) or any(_about(message, h) for h in self.stated):
                    continue  # judged again on the merged row; a header another part stated
                if any(_about(message, h) for i, h in self.borrowed if i == index):
                    continue  # about an item's value this part gave a header field: not the field's
                if (item := LEADING_ITEM.match(message)) and (index, item[1]) in self.renamed:
                    renamed = self.renamed[(index, item[1])]
                    if int(item[2]) not in renamed:
                        continue  # about a copy the merge dropped: the kept copy stands for it
                    message = f"{item[1]}[{renamed[int(item[2])]}]{message[item.end() :]}"
                self.messages.append(f"{message} ({self.names[index]})")


def merge(
    schema: Schema,
    roles: Roles,
    source: str,
    parts: list[tuple[Piece, Verdict]],
    names: list[str] | None = None,
) -> Merged:
    """One verdict for the whole text from its parts' verdicts (see the module docstring). `names` says
    what each piece is in the row's reasons ("unit 3 of 29"); by default "part 2 of 3"."""
    names = names or [f"part {i + 1} of {len(parts)}" for i in range(len(parts))]
    if all(verdict.status == "failed" for _, verdict in parts):
        errors = [f"{names[i]}: {e}" for i, (_, v) in enumerate(parts) for e in v.errors]
        return Merged(Verdict("failed", None, errors), 0, ())
    run = _Merge(schema, roles, source, parts, names)
    for name in roles.items:
        run.items(name)
    for name in roles.headers:
        run.header(name)
    run.part_messages()
    failures: list[tuple[Path, str]] = [((name,), f"{name}: the parts disagree") for name in run.conflicts]
    failures += [(parse_path(path), message) for path, message in run.clashed]
    clashed = {path for path, _ in run.clashed}
    run.rows = [row for row in run.rows if row["path"] not in clashed]
    run.values = [{**row, "verdict": "refused"} if row["path"] in clashed else row for row in run.values]
    failures += field_errors(schema, run.data, source)
    data: Any = run.data
    if failures:
        data, nulled = null_failures(schema, run.data, failures)
        run.nulled = sorted({*run.nulled, *nulled})
        conflicted = {(name,) for name in run.conflicts}  # already said, with what each part gave
        run.messages += [message for path, message in failures if path[:1] not in conflicted]
    run.messages += completeness_problems(schema.body, roles, source, parts, data or run.data, names)
    if data is None:  # a failed row says what it leaves out too: a miss is never silent
        verdict = Verdict("failed", run.data, run.messages, evidence=run.rows, values=run.values)
        return Merged(verdict, run.duplicates, tuple(run.conflicts))
    if not any(value_paths(schema.checked_body, data)) and not schema.body.get("x-empty-ok"):
        run.messages.append(f"{EMPTY_ROW}: every field is null in every part")
    status = "partial" if run.messages else "ok"
    verdict = Verdict(status, data, run.messages, run.nulled, [], run.rows, run.values)
    verdict = as_written(schema, verdict, {parse_path(path) for path in run.nulled})
    return Merged(verdict, run.duplicates, tuple(run.conflicts))
