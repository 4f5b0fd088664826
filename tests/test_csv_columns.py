"""The CSV header of `formwork results`: one value and one state column per schema field, whatever the
fields are named. A field named `status` (or `who` beside `who_state`) wrote two columns of one name,
and a spreadsheet or `csv.DictReader` kept only one of them."""

from __future__ import annotations

from formwork.flows.cli.results import ROW_COLUMNS, field_columns


def test_plain_fields_keep_their_names() -> None:
    assert field_columns(["who", "amount"]) == ["who", "who_state", "amount", "amount_state"]


def test_a_field_named_like_a_row_column_or_another_fields_state_gets_columns_of_its_own() -> None:
    fields = ["status", "who", "who_state", "settled_later", "amount"]
    header = [*ROW_COLUMNS, *field_columns(fields)]
    assert len(header) == len(set(header)) == len(ROW_COLUMNS) + 2 * len(fields)
    assert field_columns(fields) == [
        "field.status", "state.status", "field.who", "state.who", "field.who_state", "state.who_state",
        "field.settled_later", "state.settled_later", "amount", "amount_state",
    ]  # fmt: skip
