"""The timeline picture without a browser: an SVG string from ``kg.timeline``'s JSON (stdlib only).

Same drawing as the web view's timeline (``static/timeline.js``): one row per predicate, bars on a valid-time
axis styled by status (current, superseded, ended, upcoming, retracted; late arrivals outlined), each bar a link
to its source note (``#/note/<id>`` of the web view) with a tooltip, and a dashed line at the reference moment.
Used by ``pal kg timeline SUBJECT --svg FILE``.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any
from xml.sax.saxutils import escape

W, LABEL, LANE, PAD = 1100, 150, 26, 46
FILL = {"current": "#0f766e", "superseded": "#9ca3af", "ended": "#cbd5e1", "upcoming": "#ffffff",
        "retracted": "#fee2e2"}
TEXT = {"current": "#ffffff", "superseded": "#ffffff", "ended": "#1d2430", "upcoming": "#1d2430",
        "retracted": "#dc2626"}


def _t(value: str | None) -> float | None:
    if value is None:
        return None
    dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


FIRST_DAY = datetime(1, 1, 1, tzinfo=timezone.utc).timestamp()
LAST_DAY = datetime(9999, 12, 31, tzinfo=timezone.utc).timestamp()


def _day(value: str | None) -> str:
    return value[:10] if value else "open"


def domain(result: dict[str, Any]) -> tuple[float, float]:
    ts = [_t(result["reference"])]
    for line in result["lines"]:
        for tf in line["facts"]:
            ts += [_t(tf["fact"]["valid_from"]), _t(tf["fact"]["valid_to"])]
    known = [t for t in ts if t is not None]
    lo, hi = min(known), max(known)
    if hi - lo < 30 * 86400:
        lo, hi = lo - 15 * 86400, hi + 15 * 86400
    pad = (hi - lo) * 0.06
    # within what a date can be (a timeline asked at 0001-01-01 would pad past year 1: no date to tick there)
    return max(lo - pad, FIRST_DAY), min(hi + pad, LAST_DAY)


def _ticks(lo: float, hi: float) -> list[tuple[float, str]]:
    years = (hi - lo) / (365 * 86400)
    start = datetime.fromtimestamp(lo, timezone.utc)
    out = []
    if years > 3:
        step = next(s for s in (1, 5, 10, 25, 50, 100, 250, 500, 1000) if years / s <= 12)
        y = (start.year // step) * step
        while True:
            t = datetime(y, 1, 1, tzinfo=timezone.utc).timestamp() if 1 <= y <= 9999 else None
            if t is None or t > hi:
                break
            if t >= lo:
                out.append((t, str(y)))
            y += step
        return out
    months = (hi - lo) / (30 * 86400)
    step = next(s for s in (1, 3, 6, 12) if months / s <= 12) if months > 1 else 0
    if step:
        y, m = start.year, start.month
        while y <= 9999:  # (the last year a date has)
            d = datetime(y, m, 1, tzinfo=timezone.utc)
            if d.timestamp() > hi:
                break
            if d.timestamp() >= lo:
                out.append((d.timestamp(), f"{y}" if step == 12 else f"{y}-{m:02d}"))
            m += step
            y, m = y + (m - 1) // 12, (m - 1) % 12 + 1
        return out
    d = start.replace(hour=0, minute=0, second=0, microsecond=0)
    step_days = timedelta(days=7 if (hi - lo) > 14 * 86400 else 1)
    while d.timestamp() <= hi:
        if d.timestamp() >= lo:
            out.append((d.timestamp(), d.strftime("%Y-%m-%d")))
        if d > datetime.max.replace(tzinfo=timezone.utc) - step_days:  # the last days a date has
            break
        d += step_days
    return out


def _lanes(facts: list[dict[str, Any]]) -> list[int]:
    ends: list[float] = []
    out = []
    for tf in facts:
        a = _t(tf["fact"]["valid_from"])
        b = _t(tf["fact"]["valid_to"])
        a = float("-inf") if a is None else a
        b = float("inf") if b is None else b
        lane = next((i for i, e in enumerate(ends) if e <= a), None)
        if lane is None:
            lane = len(ends)
            ends.append(b)
        else:
            ends[lane] = b
        out.append(lane)
    return out


def render(result: dict[str, Any]) -> str:
    """The SVG document (text) of one ``kg.timeline`` result (its JSON form)."""
    lo, hi = domain(result)

    def x(t: float) -> float:
        return LABEL + (t - lo) / (hi - lo) * (W - LABEL - 20)

    rows = [(line, _lanes(line["facts"])) for line in result["lines"]]
    height = PAD + sum((max(ls, default=0) + 1) * LANE + 10 for _, ls in rows) + 30
    subject = escape(result["subject"]["name"])
    when = f"known at {result['known_at'][:16].replace('T', ' ')}" if result.get("known_at") else "now"
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
           f'viewBox="0 0 {W} {height}" width="{W}" height="{height}" role="img" '
           f'aria-label="timeline of {subject}" font-family="system-ui, sans-serif" font-size="12">',
           f'<title>timeline of {subject} ({when})</title>', f'<rect width="{W}" height="{height}" fill="#ffffff"/>']
    for t, label in _ticks(lo, hi):
        out.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{PAD - 6}" y2="{height - 24}" stroke="#e2e8f0"/>'
                   f'<text x="{x(t) + 3:.1f}" y="{PAD - 12}" fill="#6b7280" font-size="11">{escape(label)}</text>')
    y = PAD
    for line, lanes in rows:
        out.append(f'<text x="8" y="{y + LANE / 2 + 4}" fill="#1d2430">{escape(line["predicate"])}</text>')
        for tf, lane in zip(line["facts"], lanes):
            f, status = tf["fact"], tf["status"]
            a = _t(f["valid_from"])
            b = _t(f["valid_to"])
            left = x(a) if a is not None else LABEL
            right = x(b) if b is not None else W - 20
            top = y + lane * LANE + 3
            width = max(3 if tf["empty"] else 6, right - left)
            stroke = ' stroke="#ea580c" stroke-width="2.5"' if tf["late"] else (
                ' stroke="#dc2626" stroke-dasharray="5 3"' if status == "retracted" else (
                    ' stroke="#0f766e" stroke-dasharray="4 2"' if status == "upcoming" else ""))
            tip = (f'{line["predicate"]} = {f["object"]}; valid {_day(f["valid_from"])} to {_day(f["valid_to"])}; '
                   f'{status}{", arrived late" if tf["late"] else ""}; recorded {f["recorded_at"][:16]}; '
                   f'source {f["source_id"] or "none"}')
            label = f["object"] + (" (late)" if tf["late"] else "")
            deco = ' text-decoration="line-through"' if status == "retracted" else ""
            bar = (f'<g class="bar {status}{" late" if tf["late"] else ""}"><title>{escape(tip)}</title>'
                   f'<rect x="{left:.1f}" y="{top}" width="{width:.1f}" height="{LANE - 6}" rx="3" '
                   f'fill="{FILL[status]}"{stroke}/>'
                   f'<text x="{left + 5:.1f}" y="{top + LANE / 2 + 1}" fill="{TEXT[status]}" '
                   f'font-size="11"{deco}>{escape(label)}</text></g>')
            src = f["source_id"] or ""
            if src.startswith("m:") and src[2:].isdigit():
                bar = f'<a xlink:href="#/note/{src[2:]}" href="#/note/{src[2:]}">{bar}</a>'
            out.append(bar)
        y += (max(lanes, default=0) + 1) * LANE + 10
    ref = _t(result["reference"])
    if ref is not None and lo <= ref <= hi:
        out.append(f'<line x1="{x(ref):.1f}" x2="{x(ref):.1f}" y1="{PAD - 6}" y2="{height - 24}" stroke="#111827" '
                   f'stroke-dasharray="3 3"/><text x="{x(ref) + 4:.1f}" y="{PAD - 28}" fill="#1d2430">'
                   f'{escape(when)}</text>')
    legend_x = LABEL
    for status in ("current", "superseded", "ended", "retracted"):
        out.append(f'<rect x="{legend_x}" y="{height - 20}" width="14" height="9" fill="{FILL[status]}"/>'
                   f'<text x="{legend_x + 18}" y="{height - 12}" fill="#6b7280" font-size="11">{status}</text>')
        legend_x += 95
    out.append("</svg>")
    return "\n".join(out)
