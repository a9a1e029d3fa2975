"""Which columns a table shows at a width, and how wide: the layout every TUI table of fragments,
proposals, pins or gaps is built with (``tui/table.py``'s ``FitTable`` paints it).

A table declares its columns (``Column``: key, header, priority, minimum and maximum width, how a
value is shortened); ``fit`` takes the width the table has and returns the columns shown with
their widths and the columns folded away. A folded column is still reachable: the table keeps it
past the right edge (→ scrolls to it, one whole column a press) and the screen names it in the
detail line under the table. So at 80 columns the title, the whole kind, the owner and the
age/badge column are in view, and the id, scope or score fold first.

Display only: pure functions of widths and strings. No Textual, no I/O, no reading of the store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

PADDING = 2                 # a DataTable cell's padding: one space each side
COMFORT_AFTER = 1           # a growing column claims its comfort width once the columns up to this priority are placed
STALE, PINNED = "⚑", "●"    # the badges of the age column (text glyphs of width 1; "●" is Textual's radio dot)


def clip(text: str, width: int) -> str:
    """``text`` on one line, cut to ``width`` characters with "…"."""
    text = " ".join(str(text).split())
    if width <= 0:
        return ""
    return text if len(text) <= width else text[:width - 1] + "…"


def short_name(name: str, width: int) -> str:
    """A person's name in ``width`` characters: whole when it fits, else ``first.last`` as
    ``f.last`` (``marco.bianchi`` → ``m.bianchi``), clipped if even that is too long."""
    name = " ".join(str(name).split())
    if len(name) <= width:
        return name
    first, dot, rest = name.partition(".")
    return clip(f"{first[0]}.{rest}" if dot and first and rest else name, width)


def age_badges(age: str, *, stale: bool = False, pinned: bool = False) -> str:
    """The compact age column: ``5mo ⚑ ●`` (age, then ⚑ when stale and ● when pinned)."""
    return " ".join([age, *([STALE] if stale else []), *([PINNED] if pinned else [])])


@dataclass(frozen=True)
class Column:
    """One column of a table.

    ``priority`` 0 is never folded; a higher number folds sooner (strictly: once a column does
    not fit, it and every column after it in priority order fold). Priority 1 is for the columns
    a table must show at 80 columns beside the title (owner, age); 2 and up fold before the title
    gives up its ``comfort`` width. ``min_width`` and ``max_width`` bound its characters
    (padding aside). ``whole``: the value is never shortened (the column is as wide as its
    longest value, up to ``max_width``; a kind reads ``decision``, never ``decisio``). ``grow``:
    the column takes the most of the width left (the title). ``compact`` shortens a value to a
    width (``clip`` unless said otherwise).
    """

    key: str
    header: str
    priority: int = 1
    min_width: int = 4
    max_width: int = 20
    whole: bool = False
    grow: bool = False
    comfort: int = 0
    justify: str = "left"
    compact: Callable[[str, int], str] = clip

    def render(self, value: object, width: int) -> str:
        text = "" if value is None else str(value)
        return text if self.whole and len(text) <= width else self.compact(text, width)


@dataclass(frozen=True)
class Layout:
    """What ``fit`` decided: the columns shown (declared order) with their widths, then the
    columns folded away (declared order) with the widths they take past the right edge."""

    shown: tuple[tuple[Column, int], ...]
    folded: tuple[tuple[Column, int], ...]
    width: int

    @property
    def columns(self) -> tuple[tuple[Column, int], ...]:
        """Every column in the order the table has them: shown, then folded."""
        return self.shown + self.folded

    @property
    def shown_keys(self) -> tuple[str, ...]:
        return tuple(c.key for c, _ in self.shown)

    @property
    def folded_keys(self) -> tuple[str, ...]:
        return tuple(c.key for c, _ in self.folded)

    def used(self) -> int:
        """Characters the shown columns take, padding included."""
        return sum(w + PADDING for _, w in self.shown)


def natural_widths(columns: Sequence[Column], rows: Iterable[Mapping[str, object]]) -> dict[str, int]:
    """The longest value of each column over ``rows`` (what a column would take unshortened)."""
    keys = [c.key for c in columns]
    widest = dict.fromkeys(keys, 0)
    for row in rows:
        for key in keys:
            value = row.get(key)
            if value is not None:
                widest[key] = max(widest[key], len(str(value)))
    return widest


def _bounds(column: Column, natural: Mapping[str, int] | None) -> tuple[int, int]:
    """(the least width it is shown at, the width it would like) for one column."""
    want = column.max_width
    if natural is not None and column.key in natural:
        want = min(max(natural[column.key], len(column.header), 1), column.max_width)
    least = want if column.whole else min(column.min_width, want)
    return least, want


def fit(columns: Sequence[Column], width: int, natural: Mapping[str, int] | None = None) -> Layout:
    """The columns shown in ``width`` characters and their widths; the rest folded.

    Columns are placed by priority (then declared order) at their least width while they fit;
    priority 0 is always placed (the table then scrolls). Once the priority-1 columns are placed,
    a growing column (the title) claims its ``comfort`` width before any column of priority 2 or
    more is placed: a narrow terminal shows a readable title rather than a cut id. The width
    left is then shared among the placed columns short of the width they would like, a
    character a round each and two to a growing one; a folded column keeps the width it would
    like. ``natural`` gives the longest value of each column (``natural_widths``), so a short
    column takes no more."""
    bounds = {c.key: _bounds(c, natural) for c in columns}
    order = sorted(range(len(columns)), key=lambda i: (columns[i].priority, i))
    widths: dict[int, int] = {}
    used, claimed = 0, False
    for i in order:
        c = columns[i]
        if c.priority > COMFORT_AFTER and not claimed:
            claimed = True
            for g, has in widths.items():
                if columns[g].grow:
                    more = max(0, min(columns[g].comfort, bounds[columns[g].key][1]) - has)
                    more = min(more, max(width - used, 0))
                    widths[g] = has + more
                    used += more
        need = bounds[c.key][0] + PADDING
        if c.priority > 0 and used + need > width:
            break
        widths[i] = bounds[c.key][0]
        used += need
    left = width - used
    while left > 0:   # share what is left: a character a round to each column short of its want, two to a growing one
        short = [i for i in order if i in widths and widths[i] < bounds[columns[i].key][1]]
        if not short:
            break
        for i in short:
            more = min(2 if columns[i].grow else 1, bounds[columns[i].key][1] - widths[i], left)
            widths[i] += more
            left -= more
            if left == 0:
                break
    shown = tuple((columns[i], widths[i]) for i in range(len(columns)) if i in widths)
    folded = tuple((columns[i], bounds[columns[i].key][1]) for i in range(len(columns)) if i not in widths)
    return Layout(shown, folded, width)


def folded_detail(layout: Layout, row: Mapping[str, object], skip: Iterable[str] = ()) -> str:
    """The folded columns of one row for the detail line: ``scope payments-api · score 0.53``
    (``skip``: the columns the detail line already shows in full, such as id and title)."""
    skipped = set(skip)
    parts = []
    for column, _ in layout.folded:
        value = row.get(column.key)
        if column.key in skipped or value is None or str(value).strip() == "":
            continue
        parts.append(f"{column.header} {' '.join(str(value).split())}")
    return " · ".join(parts)
