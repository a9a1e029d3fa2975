"""FitTable: the DataTable every table of fragments, proposals, pins and gaps is, laid out by
``columns.fit`` for the width it has, re-laid out when that width changes, and scrolled
sideways one whole column per → / ← (a row-cursor DataTable scrolls one character a press).

The screen owns its rows: it gives the table each row's values by column key (``prepare`` with
all of them, then ``cells`` for each row it adds) and repaints when the table posts ``Relaid``
(its width changed the layout). The leading ``fixed`` columns (the title) stay in place while
the rest scroll. How a value is shortened and which columns fold are ``columns.py``'s; this
module only paints. Cells are plain text (``plain.DataTable``): others' text is never markup.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from rich.text import Text
from textual import events
from textual.message import Message

from .columns import Column, Layout, fit, folded_detail, natural_widths
from .plain import DataTable


class FitTable(DataTable):
    """A row-cursor DataTable whose columns fit its width (see the module docstring)."""

    DEFAULT_CSS = """
    FitTable > .datatable--fixed { background: $surface; }
    FitTable:dark > .datatable--fixed { background: $surface; }
    """

    @dataclass
    class Relaid(Message):
        """The table's width changed which columns it shows or how wide: paint the rows again."""

        table: FitTable

        @property
        def control(self) -> FitTable:
            return self.table

    def __init__(self, columns: Sequence[Column], *, fixed: int = 0, **kwargs) -> None:
        kwargs.setdefault("cursor_type", "row")
        kwargs.setdefault("zebra_stripes", True)
        super().__init__(**kwargs)
        self.specs = tuple(columns)
        self.fixed = fixed
        self.fitted: Layout | None = None
        self._natural: dict[str, int] | None = None
        self._count = 0                       # rows the last ``prepare`` was given

    # -- layout --------------------------------------------------------------------------

    def available(self) -> int:
        """Characters the columns may take: the table's width, less the vertical scrollbar's
        when the rows will not fit its height (decided from the number of rows, before they are
        added, so adding them never changes the layout and no folded column peeks in)."""
        width, height = self.size.width or self.app.size.width, self.size.height   # both include scrollbars
        if height == 0 or self._count + 2 > height:      # the header and a horizontal scrollbar
            width -= self.styles.scrollbar_size_vertical
        return max(width, 1)

    def prepare(self, rows: Iterable[Mapping[str, object]]) -> bool:
        """Lay the columns out for these rows (their longest values) at the current width.
        When the layout changes the columns are made again, which empties the table; returns
        whether it did. Call it before adding the rows' ``cells``."""
        rows = list(rows)
        self._count = len(rows)
        self._natural = natural_widths(self.specs, rows)
        return self._apply(fit(self.specs, self.available(), self._natural))

    def _apply(self, layout: Layout) -> bool:
        if layout == self.fitted and self.columns:
            return False
        self.fitted = layout
        self.clear(columns=True)
        for column, width in layout.columns:
            self.add_column(Text(column.header, justify=column.justify), width=width, key=column.key)
        self.fixed_columns = min(self.fixed, len(layout.shown))
        self.scroll_to(x=0, animate=False, immediate=True)
        return True

    def cells(self, row: Mapping[str, object], style: str = "") -> list[Text]:
        """One row's cells, in the table's column order, each shortened to its column's width
        (``style``: the whole row's, e.g. the anti-patterns to avoid in bold red)."""
        layout = self.fitted or fit(self.specs, self.available(), self._natural)
        return [Text(column.render(row.get(column.key), width), style=style, justify=column.justify, end="")
                for column, width in layout.columns]

    def folded_text(self, row: Mapping[str, object], skip: Iterable[str] = ()) -> str:
        """The row's folded columns for the detail line (``columns.folded_detail``)."""
        return folded_detail(self.fitted, row, skip) if self.fitted is not None else ""

    def shown_keys(self) -> tuple[str, ...]:
        return self.fitted.shown_keys if self.fitted is not None else ()

    def on_resize(self, event: events.Resize) -> None:
        if self.fitted is None or self._natural is None:
            return
        layout = fit(self.specs, self.available(), self._natural)
        if layout != self.fitted:
            self._apply(layout)
            self.post_message(self.Relaid(self))

    # -- scrolling by column -------------------------------------------------------------

    def column_stops(self) -> list[int]:
        """The scroll offsets at which a (scrolling) column starts at the left edge."""
        stops, x = [0], 0
        for column in self.ordered_columns[self.fixed_columns:]:
            x += column.get_render_width(self)
            stops.append(x)
        return stops

    def _scroll_column(self, step: int) -> None:
        at, end = round(self.scroll_x), self.max_scroll_x
        stops = [min(s, end) for s in self.column_stops()]
        ahead = [s for s in stops if s > at] if step > 0 else [s for s in stops if s < at]
        if ahead:
            self.scroll_to(x=ahead[0] if step > 0 else ahead[-1], animate=False, immediate=True)

    def action_cursor_right(self) -> None:
        if self.cursor_type == "row":
            self._scroll_column(+1)
        else:
            super().action_cursor_right()

    def action_cursor_left(self) -> None:
        if self.cursor_type == "row":
            self._scroll_column(-1)
        else:
            super().action_cursor_left()
