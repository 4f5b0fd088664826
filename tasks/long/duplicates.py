"""When an item of a later piece of a long text is one already kept, and what such a copy adds.

Two parts overlap by a line, so an item written there is read twice: it is the same item when both
copies are equal and written inside the overlap (`within`). A list keyed by `x-key` (a thread's
people by their e-mail) has the same item wherever its key is equal (`same_key`): a person who writes
twice is one contact, and what the later message states fills what the first left empty (`fill`).
Where both copies state a field and neither value is part of the other (`clashes`: a quoted message's
`Subject` read as the company the person's own message names), the two readings of one item disagree
and neither outranks the other: the merge nulls the field and says so, as it does for a header.
"""

from __future__ import annotations

from typing import Any


def within(spans: dict[str, list[list[int]]], region: tuple[int, int]) -> bool:
    """Whether any value of an item is written inside `region` of the whole text."""
    return any(a < region[1] and region[0] < b for found in spans.values() for a, b in found)


def same_key(one: Any, other: Any, key: tuple[str, ...]) -> bool:
    """Whether two items are one by the fields `key` names: all stated, all equal."""
    if not key or not isinstance(one, dict) or not isinstance(other, dict):
        return False
    values = [(one.get(k), other.get(k)) for k in key]
    return all(a is not None and a == b for a, b in values)


def fill(kept: Any, copy: Any) -> set[str]:
    """Fill the kept item's empty fields from a copy of it (the same person, read again in a later
    message that signs in full): the fields filled."""
    if not isinstance(kept, dict) or not isinstance(copy, dict):
        return set()
    gaps = {field for field, value in copy.items() if value is not None and kept.get(field) is None}
    kept.update({field: copy[field] for field in gaps})
    return gaps


def clashes(kept: Any, copy: Any) -> set[str]:
    """The fields both copies of one item state with values neither of which is part of the other
    (`Anna` and `Anna Schmidt` are one name written shorter; `Subject` and a company are two readings)."""
    if not isinstance(kept, dict) or not isinstance(copy, dict):
        return set()
    return {
        field for field, value in copy.items()
        if value is not None and kept.get(field) is not None and not _part_of(value, kept[field])
    }  # fmt: skip


def _part_of(one: Any, other: Any) -> bool:
    if isinstance(one, str) and isinstance(other, str):
        a, b = one.casefold(), other.casefold()
        return a in b or b in a
    return bool(one == other)
