"""A note's date in words, indexed with its text so "in May 2023" matches (a pure function)."""

from __future__ import annotations

import datetime as dt

__all__ = ["MONTH_NAMES", "render_dated"]


# English whatever the process's locale (``calendar.month_name`` follows LC_TIME, and looks the name up on each call):
# dated queries are parsed in English, so notes are indexed in English.
MONTH_NAMES = ("", "January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
               "November", "December")


# ----------------------------------------------------------------- rendering
def render_dated(content: str, occurred_at: dt.datetime | dt.date | None) -> str:
    """Text to index for a note: ``"<d Month YYYY>: <content>"`` (content unchanged if no date)."""
    if occurred_at is None:
        return content
    return f"{occurred_at.day} {MONTH_NAMES[occurred_at.month]} {occurred_at.year}: {content}"
