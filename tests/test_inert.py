"""workbench.inert, the one sanitiser of text from others: nothing a terminal acts on survives it,
it is idempotent, plain text passes unchanged (the same object), escape sequences are shown whole
and visibly, and JSON text stays valid and exactly equal in value."""

from __future__ import annotations

import json

from conftest import examples
from hostile_text import BIDI_CONTROLS, RED_TEAM, hostile, unsafe
from hypothesis import example, given, settings
from hypothesis import strategies as st

from workbench.inert import inert, is_inert

ANY_TEXT = st.one_of(hostile(), st.text(max_size=40))


@settings(max_examples=examples(400), deadline=None)
@given(ANY_TEXT)
@example(RED_TEAM)
@example("\ud800 lone surrogate \udfff")
def test_nothing_a_terminal_acts_on_survives(text):
    out = inert(text)
    assert unsafe(out) == [], (text, out)
    assert "\x1b" not in out and not any(0x80 <= ord(c) <= 0x9F for c in out)
    assert not set(BIDI_CONTROLS) & set(out)
    assert is_inert(out)
    assert inert(out) == out  # idempotent


@settings(max_examples=examples(300), deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs")).filter(lambda c: c not in BIDI_CONTROLS)
               | st.sampled_from("\t\n")))
def test_plain_text_comes_back_as_it_was(text):
    assert is_inert(text)
    assert inert(text) is text


def test_the_red_team_title_is_shown_whole_and_visibly():
    assert inert(RED_TEAM) == "Retry \\u001b[2J\\u001b]0;pwned\\u0007 \\u202eevil [/] [@click=app.quit]x[/]"
    assert inert("a\x9b2J\x9d0;t\x9c") == "a\\u009b2J\\u009d0;t\\u009c"  # C1 forms of CSI and OSC
    assert inert("ok\rFAKE") == "ok\\u000dFAKE" and inert("one\r\ntwo") == "one\ntwo"
    assert inert("tab\tand\nnewline stay") == "tab\tand\nnewline stay"
    assert inert("\u2066\u2069\u200e\u200f\u061c") == "\\u2066\\u2069\\u200e\\u200f\\u061c"
    assert inert("\x7f\x00") == "\\u007f\\u0000"


@settings(max_examples=examples(200), deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | ANY_TEXT,
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ANY_TEXT, inner, max_size=3),
                    max_leaves=8))
def test_json_text_stays_valid_and_exact(value):
    for indent in (None, 2):
        text = json.dumps(value, ensure_ascii=False, indent=indent)
        shown = inert(text)
        assert unsafe(shown) == []
        assert json.loads(shown) == value
