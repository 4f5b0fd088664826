"""Pydantic models as a user's code base has them: nested, optional, Literal, Enum, Field limits."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, Field


class Currency(StrEnum):
    eur = "EUR"
    usd = "USD"


class LineItem(BaseModel):
    description: str = Field(description="What the line is for", max_length=40)
    amount: float | None = Field(default=None, description="The line's price", ge=0)


class Receipt(BaseModel):
    """A receipt with its line items."""

    merchant: str | None = Field(default=None, description="Who was paid", max_length=60)
    currency: Currency = Field(description="The currency")
    kind: Literal["shop", "restaurant"] = Field(description="What kind of place")
    items: list[LineItem] = Field(description="The line items", max_length=10)
    note: str | None = None
