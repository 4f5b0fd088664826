"""Each field's verdict for a person (kept, dropped, refused, unsure) and what to do next after a run.

The judge (tasks/validate.py) writes its errors for the model: a retry is told "... was a guess
(probability 0.80, below 0.99); choose the value the text supports". That stays in the calls. A person
reading `formwork results` or the review page wants, per field, what was kept and why the rest was not,
in a few words, and one line that says what to do about the run.

The verdicts come from what a stored result holds: its evidence rows (value, grounded, confidence and,
where the judge marks it, `verdict`), its nulled paths and its errors. The structure decides where it
can; the error sentences are read only for what the evidence does not carry (the bound a value missed,
which field a copy repeats, a wrong format), and all of that reading is `SENTENCES` below, one pattern
per sentence form the judge writes, each with its test (tests/test_verdicts.py).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from formwork.tasks.confidence.policy import apart

Kind = Literal["kept", "dropped", "refused", "unsure"]
Hint = Literal["calibrate", "certify", "bound", "text", "logprobs", "reasoning_tokens", "format_tokens", ""]


@dataclass(frozen=True)
class Reason:
    """What one error sentence says, in a person's words: about which path (None: the whole row)."""

    path: str | None
    kind: Kind
    words: str
    hint: Hint = ""


@dataclass(frozen=True)
class FieldVerdict:
    """One value's (or null's) fate in a stored result."""

    path: str
    kind: Kind
    words: str = ""  # a few words: "not in the text", "p 0.80 < 0.99"
    detail: str = ""  # the judge's own sentence, when there is one
    hint: Hint = ""

    def short(self) -> str:
        return f"{self.path}: {self.kind}" + (f" ({self.words})" if self.words else "")


_PATH = r"(?P<path>[^\s:]+)"
_VALUE = _PATH + " .*"  # the judge's own form: the path, the value, then what is wrong with it
_CHECK = _PATH + ": .*"  # jsonschema's and the semantic checks' form: `path: message`
_BELOW = r"\(probability (?P<p>[\d.]+), below (?P<bound>[\d.]+)\)"
_UNSURE = r"unsure \((?P<what>score|p) (?P<p>[\d.]+) < (?P<bound>[\d.]+)\)"  # tasks.decide's why
# (pattern, kind, words with the pattern's groups, hint); the first match wins, so the null forms come
# before the value forms and jsonschema's generic `path: message` comes last.
SENTENCES: list[tuple[str, Kind, str, Hint]] = [
    # tasks.decide: a value or null its run's policy did not certify, and why (tasks.confidence.policy)
    (rf"{_PATH} null is unsure: {_UNSURE}", "unsure", "null, {what} {p} < {bound}", "bound"),
    (rf"{_PATH} null is unsure: its field is not certified", "unsure", "null, field not certified",
     "certify"),
    (rf"{_PATH} null is unsure: no calibration covers", "unsure", "null, no calibration", "calibrate"),
    (rf"{_PATH} null is unsure: (?P<why>[^;]{{1,50}})", "unsure", "null, {why}", ""),
    (rf"{_VALUE} dropped: {_UNSURE}", "dropped", "{what} {p} < {bound}", "bound"),
    (rf"{_VALUE} dropped: its field is not certified", "dropped", "field not certified", "certify"),
    (rf"{_VALUE} dropped: no calibration covers this choice", "dropped", "no calibration for this choice",
     "calibrate"),
    (rf"{_VALUE} dropped: no probability", "dropped", "no probability", "logprobs"),
    (rf"{_VALUE} dropped: (?P<why>.{{1,50}})$", "dropped", "{why}", ""),
    # tasks.confidence.bounds and tasks.validate
    (rf"{_PATH} null is unsure {_BELOW}", "unsure", "null, p {p} < {bound}", "bound"),
    (rf"{_PATH} null is a choice no calibration covers", "unsure", "null, no calibration", "calibrate"),
    (rf"{_PATH} null has no probability to hold to", "unsure", "null, no probability", "logprobs"),
    (rf"{_PATH} null stands where an earlier attempt was below", "unsure", "null, held from before",
     "bound"),
    (rf"{_VALUE}(?:was a guess|is below its bound) {_BELOW}", "dropped", "p {p} < {bound}", "bound"),
    (rf"{_VALUE}stands where an earlier attempt was below", "dropped", "held from an earlier attempt",
     "bound"),
    (rf"{_VALUE}is a choice no calibration covers", "dropped", "no calibration for this choice", "calibrate"),
    (rf"{_VALUE}has no probability to hold to (?P<bound>[\d.]+)", "dropped", "no probability", "logprobs"),
    (rf"{_VALUE}does not appear in the text;", "dropped", "not in the text", "text"),
    (rf"{_VALUE}is the text that gives (?P<other>\S+), not a value", "refused", "a copy of {other}", "text"),
    (rf"{_VALUE}is what a JSON-like example in the text writes", "refused", "from a JSON example", "text"),
    (rf"{_CHECK}is the schema's example, not found in the text", "refused", "the schema's example", "text"),
    (rf"{_CHECK}does not look like an e-mail address", "refused", "not an e-mail address", ""),
    (rf"{_CHECK}is not a '(?P<format>[\w-]+)'$", "refused", "wrong format ({format})", ""),
    (rf"{_CHECK}is not one of ", "refused", "not one of the choices", ""),
    (rf"{_PATH}: (?P<message>.{{1,60}})", "refused", "{message}", ""),
]  # fmt: skip
# (pattern, words, hint) for the errors about a whole row
ROW_SENTENCES: list[tuple[str, str, Hint]] = [
    (r"reasoning pass stopped at (?P<why>\w+)", "reasoning pass stopped at {why}", "reasoning_tokens"),
    (r"formatting pass stopped at (?P<why>\w+)", "formatting pass stopped at {why}", "format_tokens"),
    (r"no JSON came back .*finish=(?P<why>\w+)", "no JSON came back (finish {why})", "format_tokens"),
    (r"no JSON came back", "no JSON came back", "format_tokens"),
    (r"(?:note: )?the text was cut to (?P<n>\d+)", "text cut to {n} characters to fit", ""),
    (r"no value at all", "no value at all", "text"),
    (r"no calibration vouches for this row", "no calibration vouches for this row", "calibrate"),
    (r"part (?P<k>\d+) of (?P<n>\d+) \(characters [\d-]+\) failed", "part {k} of {n} failed", ""),
    (r"incomplete: (?P<what>.{1,80})", "incomplete: {what}", ""),
]  # fmt: skip


def read_error(sentence: str) -> Reason:
    """What one stored error says: a field's verdict, or the row's (path None) in its own words."""
    for pattern, words, hint in ROW_SENTENCES:
        if match := re.match(pattern, sentence):
            return Reason(None, "refused", words.format(**match.groupdict()), hint)
    for pattern, kind, words, hint in SENTENCES:
        if match := re.match(pattern, sentence):
            return Reason(match["path"], kind, words.format(**match.groupdict()), hint)
    return Reason(None, "refused", sentence)


def _inside(path: str, parents: set[str]) -> str | None:
    return next((p for p in parents if path == p or path.startswith((f"{p}.", f"{p}["))), None)


def field_verdicts(row: dict[str, Any]) -> tuple[list[FieldVerdict], list[tuple[str, str]]]:
    """Each value's verdict in a stored result row (db.queries.result_rows), and the row's own problems
    (a few words, and the sentence they come from).

    A value the judge marks `refused` in its evidence, or that an error names, takes that verdict; a
    value under a nulled path is dropped; one the text does not back is dropped as not in the text;
    the rest are kept."""
    reasons: dict[str, tuple[Reason, str]] = {}
    problems: list[tuple[str, str]] = []
    for sentence in row.get("errors") or []:
        reason = read_error(sentence)
        if reason.path is None:
            problems.append((reason.words, sentence))
        else:
            reasons.setdefault(reason.path, (reason, sentence))
    nulled = set(row.get("nulled") or [])
    found: list[FieldVerdict] = []
    for e in row.get("evidence") or []:
        path = e["path"]
        if e.get("value") is None and path not in reasons:
            continue  # absent or null, and nothing said about it
        shown = f"p {e['confidence']:.2f}" if e.get("confidence") is not None else ""
        if path in reasons:
            reason, sentence = reasons.pop(path)
            words = reason.words if "p " in reason.words or not shown else f"{reason.words}, {shown}"
            words = _told_apart(words, e.get("confidence"))
            found.append(FieldVerdict(path, reason.kind, words, sentence, reason.hint))
        elif e.get("verdict") == "refused":
            found.append(FieldVerdict(path, "refused"))
        elif parent := _inside(path, nulled):
            found.append(FieldVerdict(path, "dropped", f"with {parent}" if parent != path else ""))
        elif not e.get("grounded", True):
            found.append(FieldVerdict(path, "dropped", "not in the text", hint="text"))
        else:
            found.append(FieldVerdict(path, "kept", "default" if e.get("kind") == "default" else ""))
    found += [
        FieldVerdict(path, r.kind, r.words, sentence, r.hint) for path, (r, sentence) in reasons.items()
    ]
    return found, problems


_SAME = re.compile(r"p (?P<p>[\d.]+) < (?P<bound>[\d.]+)")


def _told_apart(words: str, confidence: float | None) -> str:
    """A row stored before the judge wrote the digits that differ said "p 0.99 < 0.99": the value's own
    probability, from its evidence, with the digits that show it below its bound."""
    match = _SAME.search(words)
    if match is None or confidence is None or float(match["p"]) < float(match["bound"]):
        return words
    bound = float(match["bound"])
    if confidence >= bound:
        return words
    return words.replace(match[0], f"p {apart(confidence, bound)} < {bound:g}")


def summary_line(row: dict[str, Any]) -> str:
    """The row's verdicts in a few words a line: kept fields together, then each other one."""
    verdicts, problems = field_verdicts(row)
    kept = [v.path for v in verdicts if v.kind == "kept"]
    label = "kept" if row.get("status") != "failed" else "passed, in a failed row"  # a failed row keeps none
    lines = [f"{label}: {', '.join(kept)}"] if kept else []
    lines += [v.short() for v in verdicts if v.kind != "kept"]
    return "\n".join(lines + [words for words, _ in problems])


ADVICE: dict[Hint, Callable[[int, str], str]] = {
    "calibrate": lambda n, schema: (
        f"{n} choice(s) had no calibration for this schema and model: calibrate with "
        f"`formwork eval GOLD.jsonl --schema {schema} --calibrate` (gold sets: examples/gold/)"
    ),
    "certify": lambda n, schema: (
        f"{n} value(s) are in fields their calibration could not certify on its gold (the run's summary "
        f"says each field's best bound): a stronger model run on its own (`formwork models`, `--model`; "
        f"an escalation's values stay unsure unless that model is calibrated on the records escalated to "
        f"it: `formwork eval --calibrate --from-run B --escalated-from A`), "
        f"more gold records for those fields, or one claim pooled over them "
        f"(`formwork eval GOLD.jsonl --schema {schema} --calibrate --claim pooled`)"
    ),
    "bound": lambda n, schema: (
        f"{n} value(s) were below their bound: a larger model is surer (`formwork models`), or "
        f"calibrate this one (`formwork eval GOLD.jsonl --schema {schema} --calibrate`)"
    ),
    "text": lambda n, schema: (
        f"{n} value(s) were not backed by the text: check those records (`formwork review`) or use a "
        "larger model (`formwork models`)"
    ),
    "logprobs": lambda n, schema: (
        f"{n} value(s) had no probability: the engine gives no grammar-masked logprobs (docs/production.md)"
    ),
    "reasoning_tokens": lambda n, schema: (
        f"{n} reasoning pass(es) ran out of tokens: `formwork retry --set reasoning_max_tokens=1024`"
    ),
    "format_tokens": lambda n, schema: (
        f"{n} formatting pass(es) gave no complete JSON: `formwork retry --set format_max_tokens=1024`"
    ),
}


def next_step(rows: list[dict[str, Any]]) -> str:
    """One line for a run: what to do about the most common reasons its values were not kept."""
    if not rows:
        return "no results: run `formwork run INPUT --schema NAME` first"
    hints: Counter[Hint] = Counter()
    for row in rows:
        verdicts, _ = field_verdicts(row)
        hints.update(v.hint for v in verdicts if v.kind != "kept" and v.hint)
        hints.update(read_error(e).hint for e in row.get("errors") or [] if read_error(e).path is None)
    hints.pop("", None)
    if not hints:
        failed = sum(row["status"] == "failed" for row in rows)
        return f"{failed} record(s) failed: see their errors" if failed else "every value kept: nothing to do"
    schema = str(rows[0].get("schema") or "NAME").split("@")[0]
    return "next: " + "; ".join(ADVICE[hint](n, schema) for hint, n in hints.most_common(2))


def verdict_rows(row: dict[str, Any]) -> list[dict[str, Any]]:
    """The verdicts as `formwork results --format jsonl` carries them: short words and the full detail."""
    verdicts, problems = field_verdicts(row)
    found = [{"path": v.path, "verdict": v.kind, "why": v.words, "detail": v.detail} for v in verdicts]
    return found + [{"path": None, "verdict": "refused", "why": w, "detail": d} for w, d in problems]
