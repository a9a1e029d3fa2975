"""Core messages in the TUI's words: no command-line flags, no `workbench ...` commands.

The core's errors are written for the command line ("use --force to replace it", "--days must
be ..."). The TUI shows the same errors, so ``plain`` rewrites each phrase that names a flag or
a command into what the TUI user does instead (confirm in a dialog, fill in a field). Known
phrases first, then a fallback so no ``--flag`` and no `workbench CMD` survive. It only
rewrites text: it never hides an error, and it knows nothing of widgets.
"""

from __future__ import annotations

import re

# (pattern, replacement), applied in order; the most specific phrases come first.
RULES: list[tuple[re.Pattern[str], str]] = [(re.compile(p, re.DOTALL), r) for p, r in (
    # export: overwriting an earlier export, or a folder with other files
    (r"remove it, or use --force to replace it", "remove it, or confirm overwrite in the dialog to replace it"),
    (r"\(use --force to (replace|remove) it\)", r"(confirm overwrite in the dialog to \1 it)"),
    (r"\(use --force to write into it\)", "(confirm overwrite in the dialog to write into it)"),
    # the secret guard
    (r"\(remove it, or pass --allow-secret to store it anyway\)",
     "(remove it before saving: the TUI never stores a credential)"),
    # writes
    (r" \(--reason TEXT\)", ": type it in the reason field"),
    (r"--base must be a version number", "the version an edit starts from must be a version number"),
    (r"See `workbench diff \S+ (\d+) (\d+)`", r"Compare v\1 with v\2 in the fragment's history"),
    (r" \(pass --id to choose another\)", " (change the title to get another id)"),
    (r" \(pass --id\)", " (change the title to get another id)"),
    # nudges
    ((r"Answer each with `workbench verify ID --as OWNER` \(still true\), "
      r"`workbench snooze ID --days N --as OWNER`,\s*or an edit\."),
     "Answer each in the nudge inbox: verify (still true), snooze, or edit."),
    (r"--days must", "snooze days must"),
    (r"^the number of days must", "snooze days must"),
    (r"^the cooldown must", "the nudge cooldown must"),
    (r"^the base must be a version number", "the version an edit starts from must be a version number"),
    (r"^bad expiry date", "bad until date"),
    (r"^the expiry date (\S+) is in the past", r"the until date \1 is in the past"),
    (r": choose another id$", " (change the title to get another id)"),
    (r"^the budget must", "the token budget must"),
    (r"^the query must be non-empty", "the set's query must be non-empty"),
    (r"--cooldown must", "the nudge cooldown must"),
    # pins
    (r"bad --until", "bad until date"),
    (r"--until (\S+) is in the past", r"the until date \1 is in the past"),
    # exports and sets
    (r"bad --base-url", "bad base URL"),
    (r"--base-url", "the base URL"),
    (r"--budget must", "the token budget must"),
    (r"--query must", "the set's query must"),
    # who and where
    (r"pass --as NAME \(or set default_principal in workbench\.yaml\)",
     "start the TUI as a named principal (or set default_principal in workbench.yaml)"),
    (r"pass --scope org=ORG,repo=REPO", "give it a scope like org=ORG,repo=REPO"),
    (r"run `workbench init` first, or pass --workspace DIR / set WORKBENCH_HOME",
     "create one first, or open another folder (WORKBENCH_HOME)"),
    (r"see `workbench dedupe`", "compare the two fragments"),
)]

_COMMAND = re.compile(r"`workbench ([a-z][a-z-]*)[^`]*`")
_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9-]*)")


# The core names the parameter an error is about (``WorkbenchError.param``); the TUI's hint for it.
HINTS = {"reason": ": type it in the reason field"}


def plain(message) -> str:
    """An error (or its message) in TUI wording: the TUI's hint for the parameter it is about, and
    every command-line flag or command a message still names replaced."""
    param = getattr(message, "param", None)
    message = getattr(message, "message", message)
    if param in HINTS and not message.endswith(HINTS[param]):
        message += HINTS[param]
    for pattern, replacement in RULES:
        message = pattern.sub(replacement, message)
    message = _COMMAND.sub(lambda m: f"the {m.group(1)} command", message)
    return _FLAG.sub(lambda m: m.group(1).replace("-", " "), message)
