"""Standard input wherever a command reads a file: ``-`` names it (``ingest -``, ``eval --golden -``,
``check --golden -`` / ``--baseline -``, ``edit --golden -``, ``init --config -``; ``edit``,
``propose`` and ``review accept`` read their ``--file -`` through ``remote.read_input`` too).

Standard input can be read once, so one option at most may name it. The core reads paths: a
golden set or a config given on stdin is handed to it as a file in a private temporary folder,
removed when the command ends. Forwarded to a team server, the caller's standard input travels
with the command (remote.py) and is read there from what was sent. Parsing only: what the text
means is the core's.
"""

from __future__ import annotations

import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

import click

from ..userpath import expand_user

STDIN = "-"
STDIN_NAME = "<stdin>"   # how a fragment file read from standard input is named in reports


def one_stdin(**given: object) -> None:
    """Refuse a command line that names standard input (``-``) in more than one option."""
    named = [f"--{k.replace('_', '-')}" if k != "paths" else "PATH" for k, v in given.items()
             if v == STDIN or (isinstance(v, (tuple, list)) and STDIN in v)]
    counts = sum(list(v).count(STDIN) if isinstance(v, (tuple, list)) else v == STDIN for v in given.values())
    if counts > 1:
        raise click.UsageError(f"standard input ('-') can be read once: it is named by {', '.join(named)}")


def read_stdin() -> str:
    """Standard input as text (the caller's, when the command runs in a team server)."""
    from ..errors import UserError
    from .remote import read_input

    try:
        return read_input(STDIN)
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read standard input: {e}") from e


@contextmanager
def input_path(value: str | None, *, name: str) -> Iterator[str | None]:
    """``value`` as given, or for ``-`` the path of a temporary file named ``name`` holding
    standard input (removed afterwards)."""
    if value != STDIN:
        yield value
        return
    text = read_stdin()
    with tempfile.TemporaryDirectory(prefix="workbench-stdin-") as tmp:
        path = Path(tmp) / name
        path.write_text(text, encoding="utf-8")
        yield str(path)


def stdin_paths(paths: Iterable[str], *, name: str) -> list:
    """Paths, with ``-`` replaced by the text of standard input as a ``TextFile`` named ``name``."""
    from ..models import TextFile

    return [TextFile(name, read_stdin()) if p == STDIN else p for p in paths]


@contextmanager
def config_input(value: str | None) -> Iterator[str | None]:
    """``init --config``: ``value``, or for ``-`` a temporary workbench.yaml holding standard input,
    with the golden set its relative ``golden:`` names copied beside it from the current folder
    (where a file given by path would have its golden set beside it)."""
    if value != STDIN:
        yield value
        return
    import shutil

    from ..config import WorkspaceConfig

    with input_path(value, name="workbench.yaml") as path:
        golden = WorkspaceConfig.load(Path(path)).golden
        if golden and not expand_user(golden).is_absolute():
            source = Path.cwd() / golden
            target = Path(path).parent / golden
            if source.is_file() and target.resolve().is_relative_to(Path(path).parent.resolve()):
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)
        yield path
