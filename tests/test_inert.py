"""workbench.inert, the one sanitiser of text from others: nothing a terminal acts on survives it,
it is idempotent, plain text passes unchanged (the same object), escape sequences are shown whole
and visibly, invisible characters (tags, zero-width space, BOM, separators...) are shown while the
joiners scripts and emoji need are kept, and JSON text stays valid and exactly equal in value."""

from __future__ import annotations

import json

from conftest import examples
from hostile_text import BIDI_CONTROLS, INVISIBLES, RED_TEAM, TAGGED, hostile, unsafe
from hypothesis import example, given, settings
from hypothesis import strategies as st

from workbench.inert import inert, is_inert

ANY_TEXT = st.one_of(hostile(), st.text(max_size=40))


@settings(max_examples=examples(400), deadline=None)
@given(ANY_TEXT)
@example(RED_TEAM)
@example("\ud800 lone surrogate \udfff")
@example(f"see{TAGGED} zero\u200bwidth\ufeff")
def test_nothing_a_terminal_acts_on_survives(text):
    out = inert(text)
    assert unsafe(out) == [], (text, out)
    assert "\x1b" not in out and not any(0x80 <= ord(c) <= 0x9F for c in out)
    assert not set(BIDI_CONTROLS) & set(out) and not set(INVISIBLES) & set(out)
    assert is_inert(out)
    assert inert(out) == out  # idempotent


@settings(max_examples=examples(300), deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs")).filter(lambda c: not unsafe(c))
               | st.sampled_from("\t\n\u200c\u200d")))
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


def test_invisible_characters_are_shown_and_the_joiners_scripts_need_are_kept():
    assert (inert("a\u200bb\u2060c\ufeffd\u180ee\u2028f\u2029g\u2062h")
            == "a\\u200bb\\u2060c\\ufeffd\\u180ee\\u2028f\\u2029g\\u2062h")
    assert inert("\ufeffat the start") == "\\ufeffat the start"
    hidden = inert("Retry" + TAGGED)   # a hidden instruction, as an exported AGENTS.md would carry it
    assert hidden.startswith("Retry\\udb40\\udc69\\udb40\\udc67") and hidden.isascii()
    assert json.loads(f'"{hidden}"') == "Retry" + TAGGED   # JSON's own escape: the same value
    for kept in ("\u200c", "\u200d", "\U0001f468\u200d\U0001f469\u200d\U0001f467", "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",
                 "\u2764\ufe0f", "co\u00adop"):
        assert inert(kept) is kept and is_inert(kept)


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
