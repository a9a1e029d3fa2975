"""The widgets every TUI screen shows text with: Textual's own, made to show text from others as
plain, inert ``rich.text.Text`` and never to read it as markup.

Textual reads a plain ``str`` as markup in many places (a DataTable cell, a Tree label, a Select
option, a border title, a notification): a title holding ``[/]`` raised MarkupError and ended the
app, again on every start, and ``[@click=app.quit]x[/]`` became a link that ran an app action.
Rich passes ESC and C1 controls through to the terminal, too. So the screens import ``Static``,
``Label``, ``DataTable``, ``Tree``, ``Select``, ``Markdown``, ``Input`` and ``TextArea`` from this
module (tests/test_tui_hostile_text.py checks that no screen imports them from Textual), whose
versions turn every ``str`` they are given into ``plain_text(...)``: a Text of ``workbench.inert`` text,
no markup. A ``Text`` the screens built themselves keeps its styles unless its plain text is not
inert (then it is shown plain). Markdown bodies are made inert before parsing, and a link in one
opens only an http(s) address in the browser (never a local file or an app's URL scheme); the
link's action is Textual's own ``link(...)``, so no markdown can name an app action.

This module decides nothing about what is shown: only how.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import widgets
from textual.document._edit import Edit

from ..inert import inert, is_inert

OPENED_SCHEMES = ("http://", "https://")


def plain_text(value: Any) -> Any:
    """``value`` as something Textual shows literally: a ``str`` (or None) as inert Text; a
    ``Text`` as it is when its text is inert, else as plain inert Text; anything else (a
    renderable the screen built) as it is."""
    if value is None:
        return Text("")
    if isinstance(value, str):
        return Text(inert(value), end="")
    if isinstance(value, Text):
        return value if is_inert(value.plain) else Text(inert(value.plain), end="")
    return value


def plain_title(value: Any) -> Any:
    """A border title or subtitle (Textual reads a ``str`` there as markup)."""
    return None if value is None else plain_text(value)


class Static(widgets.Static):
    """A Static that never reads markup and shows control characters visibly."""

    def __init__(self, content: Any = "", *, markup: bool = False, **kwargs: Any) -> None:
        super().__init__(plain_text(content), markup=False, **kwargs)

    def update(self, content: Any = "", *, layout: bool = True) -> None:
        super().update(plain_text(content), layout=layout)


class Label(widgets.Label):
    """A Label that never reads markup and shows control characters visibly."""

    def __init__(self, content: Any = "", *, markup: bool = False, **kwargs: Any) -> None:
        super().__init__(plain_text(content), markup=False, **kwargs)

    def update(self, content: Any = "", *, layout: bool = True) -> None:
        super().update(plain_text(content), layout=layout)


class DataTable(widgets.DataTable):
    """A DataTable whose ``str`` cells and labels are plain Text (Textual reads a ``str`` cell as markup)."""

    def add_column(self, label: Any, *args: Any, **kwargs: Any):
        return super().add_column(plain_text(label), *args, **kwargs)

    def add_row(self, *cells: Any, label: Any = None, **kwargs: Any):
        return super().add_row(*map(plain_text, cells), label=None if label is None else plain_text(label), **kwargs)

    def add_rows(self, rows: Any) -> list:
        return [self.add_row(*row) for row in rows]

    def update_cell(self, row_key: Any, column_key: Any, value: Any, **kwargs: Any) -> None:
        super().update_cell(row_key, column_key, plain_text(value), **kwargs)

    def update_cell_at(self, coordinate: Any, value: Any, **kwargs: Any) -> None:
        super().update_cell_at(coordinate, plain_text(value), **kwargs)


class Tree(widgets.Tree):
    """A Tree whose labels are plain Text (Textual reads a ``str`` label as markup)."""

    def process_label(self, label: Any) -> Text:
        return super().process_label(plain_text(label))


class Select(widgets.Select):
    """A Select whose option prompts are plain Text (an OptionList reads a ``str`` prompt as markup)."""

    def __init__(self, options: Any, **kwargs: Any) -> None:
        super().__init__([(plain_text(prompt), value) for prompt, value in options], **kwargs)

    def set_options(self, options: Any) -> None:
        super().set_options([(plain_text(prompt), value) for prompt, value in options])


class Markdown(widgets.Markdown):
    """A Markdown view of inert text whose links open only http(s) addresses, in the browser."""

    def __init__(self, markdown: str | None = None, **kwargs: Any) -> None:
        kwargs["open_links"] = False
        super().__init__(None if markdown is None else inert(markdown), **kwargs)

    def update(self, markdown: str):
        return super().update(inert(markdown))

    def append(self, markdown: str):
        return super().append(inert(markdown))

    def on_markdown_link_clicked(self, event: widgets.Markdown.LinkClicked) -> None:
        event.stop()
        href = event.href.strip()
        if href.lower().startswith(OPENED_SCHEMES):
            self.app.open_url(href)
        else:
            self.notify(f"not opened: {href} (only http and https links open, in your browser)",
                        title="Link", severity="warning")


class Input(widgets.Input):
    """An Input whose value never holds a control character (a draft's title can come from others)."""

    def validate_value(self, value: str) -> str:
        return inert(value)


class TextArea(widgets.TextArea):
    """A TextArea whose text never holds a control character: what it loads (a fragment's body,
    written by others) and what is typed or pasted into it are inert."""

    def __init__(self, text: str = "", **kwargs: Any) -> None:
        super().__init__(inert(text), **kwargs)

    def load_text(self, text: str) -> None:
        super().load_text(inert(text))

    def edit(self, edit: Edit):
        if not is_inert(edit.text):
            edit.text = inert(edit.text)
        return super().edit(edit)
