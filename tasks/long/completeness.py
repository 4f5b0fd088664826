"""Checks that a long text's merged row holds all of it, where the schema and the text allow a check.

The failure users of other tools report most about long documents is a list that silently stops: the
job says COMPLETED and holds the first few tens of entries. Each part was judged on what it says, not
on what it left out, so the merged row of a long text (tasks/long/partwise.py) is also checked for what is
missing; a failed check makes it `partial` with the reason, never `ok`:
- a part whose text shows table rows gave no items at all (that part alone is read once more first,
  told so: tasks/long/partwise.py);
- fewer items than the text's tables have rows (header rows apart), where the items are objects
  (records, not a list of tags); a text read whole is checked for this too;
- an items field keyed by an e-mail (`x-key`) leaves out an address the text writes; a text read
  whole is checked for this too;
- the items' amounts do not add up to the total the text states, nor to a subtotal it states (an
  invoice's net, VAT added after it), within a cent per item. The total
  is the header field `x-total-of` names (`"items.amount"`), else a number field named like a total
  (total, grand_total, sum) beside one items field whose items have one amount-like number field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from formwork.schemas.annotations import value_types
from formwork.schemas.roles import Roles, item_node
from formwork.tasks.grounding.numbers import digit_readings
from formwork.tasks.grounding.spans import EMAIL
from formwork.tasks.long.layout import table_headers
from formwork.tasks.long.parts import Piece
from formwork.tasks.long.units import find_units
from formwork.tasks.validate import Verdict

INCOMPLETE = "incomplete:"  # begins every reason this module gives (counted by benchmarks/long_texts.py)
TOTAL_NAME = re.compile(r"^(?:grand_?)?(?:total|sum)(?:_?amount)?$", re.IGNORECASE)
# a mail's To, Cc and Bcc lines name people who were written to, not people who wrote
ADDRESSED = re.compile(r"(?im)^[> ]*(?:to|cc|bcc|an|à|宛先|收件人|抄送)\s*[:：].*$")
SUBTOTAL = re.compile(
    r"(?i)\b(?:sub-?\s?total|net(?:to)?|zwischensumme|sous-total|total ht|subtotal|importe neto)\b"
    r"|小\s*[計计]"
)
AMOUNT_NAME = re.compile(r"^(?:line_?)?(?:amount|price|total|cost|value)$", re.IGNORECASE)


def _numeric(node: Any) -> bool:
    return isinstance(node, dict) and bool(value_types(node) & {"number", "integer"})


def total_of(body: dict[str, Any], roles: Roles) -> tuple[str, str, str] | None:
    """(header field, items field, item field) whose sum the header states, or None."""
    properties = body.get("properties") or {}
    for name in roles.headers:
        declared = (properties.get(name) or {}).get("x-total-of")
        if isinstance(declared, str) and declared.count(".") == 1:
            items, field = declared.split(".")
            return name, items, field
    totals = [n for n in roles.headers if TOTAL_NAME.match(n) and _numeric(properties.get(n))]
    if len(totals) != 1 or len(roles.items) != 1:
        return None
    item = item_node(body, roles.items[0]).get("properties") or {}
    amounts = [n for n, node in item.items() if AMOUNT_NAME.match(n) and _numeric(node)]
    return (totals[0], roles.items[0], amounts[0]) if len(amounts) == 1 else None


@dataclass(frozen=True)
class Sum:
    """The items' amounts added beside the total the text states (`total_of`)."""

    total_field: str
    items: str
    amount: str
    added: float
    total: float
    count: int
    source: str = ""  # the text, whose subtotal lines are read only where the total is not met

    @cached_property
    def agrees(self) -> bool:
        """The items add up to the total, or else to a subtotal the text states (an invoice's net
        amount, its VAT added after), within a cent of rounding per item."""

        def near(stated: float) -> bool:
            return abs(self.added - stated) <= 0.01 * self.count

        return near(self.total) or any(near(stated) for stated in subtotals(self.source))


def subtotals(source: str) -> tuple[float, ...]:
    """The amounts the text writes on its subtotal lines ("Subtotal 110.74", "Zwischensumme", 小計)."""
    found: list[float] = []
    for line in source.split("\n"):
        if SUBTOTAL.search(line):
            found += [float(r.value) for r in digit_readings(line, []) if r.value > 0]
    return tuple(found)


def _stated(
    body: dict[str, Any], roles: Roles, merged: dict[str, Any]
) -> tuple[str, str, str, Any, list] | None:
    """(total field, items field, amount field, the total, the items) where the schema names a total
    of the items (`total_of`), else None."""
    summed = total_of(body, roles)
    if not summed:
        return None
    total_field, items_field, amount_field = summed
    return total_field, items_field, amount_field, merged.get(total_field), merged.get(items_field) or []


def adds_up(body: dict[str, Any], roles: Roles, merged: dict[str, Any], source: str = "") -> Sum | None:
    """The items' amounts against the stated total (and the subtotals `source` states), or None where
    there is no check: no total field, no total stated, or an item without an amount."""
    stated = _stated(body, roles, merged)
    if not stated:
        return None
    total_field, items_field, amount_field, total, items = stated
    amounts = [item.get(amount_field) if isinstance(item, dict) else None for item in items]
    if (
        not isinstance(total, int | float)
        or not amounts
        or not all(isinstance(a, int | float) for a in amounts)
    ):
        return None
    added = round(sum(amounts), 2)
    return Sum(total_field, items_field, amount_field, added, total, len(amounts), source)


def over_total(body: dict[str, Any], roles: Roles, merged: dict[str, Any], source: str) -> str | None:
    """Where the items cannot add up: the reason, if there are none under a total above 0 though the
    text's layout lists two or more (tasks.long.units; a receipt that itemises nothing may list none),
    or if some have no amount and the amounts the others state already exceed the total, the schema
    allowing no amount below 0 (a 1.5B statement read in parts was `ok` with 7 amount-less items
    beside 5,570.90 of amounts under a total of 2,895.09; one read from perfect parts, with none)."""
    stated = _stated(body, roles, merged)
    if not stated:
        return None
    total_field, items_field, amount_field, total, listed = stated
    node = (item_node(body, items_field).get("properties") or {}).get(amount_field) or {}
    items = [i for i in listed if isinstance(i, dict)]
    known = [i[amount_field] for i in items if isinstance(i.get(amount_field), int | float)]
    if isinstance(total, int | float) and total > 0 and not items and len(find_units(source).units) > 1:
        return f"{INCOMPLETE} no {items_field}, but the {total_field} is {total:g} and the text lists some"
    if not isinstance(total, int | float) or len(known) == len(items) or node.get("minimum", -1) < 0:
        return None
    added = round(sum(known), 2)
    if added <= total + 0.01 * len(known):
        return None
    return (
        f"{INCOMPLETE} the {len(known)} {items_field}' {amount_field} stated add up to {added:g}, more than "
        f"the {total_field} {total:g}, and {len(items) - len(known)} more have none: some are misread"
    )


def table_rows(text: str, start: int = 0, end: int | None = None) -> int:
    """How many table rows below a header row stand between `start` and `end` of `text`."""
    end = len(text) if end is None else end
    rows = 0
    for _, header_end, table_end in table_headers(text):
        body = text[max(header_end, start) : min(table_end, end)]
        rows += sum(1 for line in body.split("\n") if line.strip())
    return rows


def silent_parts(roles: Roles, source: str, parts: list[tuple[Piece, Verdict]]) -> list[tuple[int, int]]:
    """(part index, table rows it shows) for each part that was read for items but gave none (a
    list's header text, read without its items field, is not asked for any)."""
    silent = []
    for index, (part, verdict) in enumerate(parts):
        data = verdict.data if isinstance(verdict.data, dict) else {}
        if verdict.status == "failed" or not any(name in data for name in roles.items):
            continue
        shown = table_rows(source, part.start, part.end)
        if shown and not any(data.get(name) for name in roles.items):
            silent.append((index, shown))
    return silent


def missing_rows(body: dict[str, Any], roles: Roles, source: str, data: dict[str, Any]) -> list[str]:
    """The reason, if the one items field of records (objects, not a list of tags) holds fewer items
    than the text's tables have rows; checked for a text read whole too (tasks/long/partwise.py)."""
    if len(roles.items) != 1:
        return []
    name = roles.items[0]
    item = item_node(body, name)
    if not ("object" in value_types(item) or "properties" in item):
        return []
    rows, found = table_rows(source), data.get(name) or []
    if len(found) >= rows:
        return []
    return [f"{INCOMPLETE} {name} holds {len(found)} items for the text's {rows} table rows"]


def missing_keys(body: dict[str, Any], roles: Roles, source: str, data: dict[str, Any]) -> list[str]:
    """The reason, if an items field identified by an e-mail (`x-key` naming a field of format email)
    has fewer items than the text has addresses, beyond those its items hold: a 1.5B model's `ok` row
    of a five-mail thread held one of its five people. Checked for a text read whole too. Addresses
    on a To, Cc or Bcc line are not counted: those people were written to."""
    problems, written = [], set[str]()
    for name in roles.items:
        fields = item_node(body, name).get("properties") or {}
        for key in roles.keys.get(name, ()):
            node = fields.get(key) or {}
            if "email" not in (node.get("format"), node.get("x-format")):
                continue
            written = written or {m.group().casefold() for m in EMAIL.finditer(ADDRESSED.sub("", source))}
            listed = [item for item in data.get(name) or [] if isinstance(item, dict)]
            held = {str(item[key]).casefold() for item in listed if item.get(key)}
            # an item whose address was dropped (below its bound) may stand for one the text writes, but
            # then nothing shows that it does (the 1.5B gave a company as a person, with no address)
            unmatched, keyless = len(written - held), sum(1 for item in listed if not item.get(key))
            if unmatched > keyless:
                problems.append(
                    f"{INCOMPLETE} {name} leaves out {unmatched - keyless} of the {len(written)} {key} "
                    "addresses the text writes"
                )
            elif unmatched:
                problems.append(
                    f"{INCOMPLETE} {unmatched} of the {len(written)} {key} addresses the text writes are in "
                    f"no item of {name}, and {keyless} of its items have no {key}: nothing shows they are "
                    "the same"
                )
    return problems


def completeness_problems(
    body: dict[str, Any], roles: Roles, source: str, parts: list[tuple[Piece, Verdict]],
    merged: dict[str, Any], names: list[str],
) -> list[str]:  # fmt: skip
    """What the merged row of a long text leaves out, as reasons (see the module docstring); `names`
    says what each piece is ("part 2 of 3", "unit 5 of 29")."""
    problems = [
        f"{INCOMPLETE} {names[index]} gave no items though it shows {shown} table rows"
        for index, shown in silent_parts(roles, source, parts)
    ]
    return problems + missing_from(body, roles, source, merged)


def missing_from(body: dict[str, Any], roles: Roles, source: str, data: dict[str, Any]) -> list[str]:
    """What a row's items leave out, as reasons: table rows, e-mail addresses, and a stated total they
    do not add up to. A text read whole is checked for these too (tasks/long/partwise.py): a 1.5B
    model's whole statement was `ok` with 2 of its 24 expenses, both of them payments."""
    problems = missing_rows(body, roles, source, data) + missing_keys(body, roles, source, data)
    checked = adds_up(body, roles, data, source)
    if checked is not None and not checked.agrees:
        problems.append(
            f"{INCOMPLETE} the {checked.items}' {checked.amount} add up to {checked.added:g}, the "
            f"{checked.total_field} is {checked.total:g}: an item may be missing or misread"
        )
    exceeded = over_total(body, roles, data, source)
    return problems + ([exceeded] if exceeded else [])
