"""Browse's owner and kind filters when what is typed matches several: every match is listed under
the filters and the table shows the rows of all of them (never one picked silently), at 80×24."""

from __future__ import annotations

from tui_support import SMALL, app_for, inside_screen, settle, until


async def test_an_owner_filter_matching_several_lists_them_all_and_shows_all_their_rows(sample_wb):
    app = app_for(sample_wb)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        screen = app.screen
        matches = screen.query_one("#filter-matches")
        assert not matches.display
        screen.query_one("#filter-owner").focus()
        await pilot.pause()
        await pilot.press("o")  # omar.haddad, and sofia.okafor (a word of it starts with o)
        await until(pilot, lambda: matches.display)
        await settle(pilot)
        text = str(matches.render())
        assert "owner “o” matches 2: omar.haddad, sofia.okafor" in text, text
        assert inside_screen(app, matches)
        assert {r.owner for r in screen.rows} == {"omar.haddad", "sofia.okafor"}
        assert "2 owners" in str(screen.query_one("#browse-count").render())
        await pilot.press("m")  # "om": one owner left, named in the count line; the list goes
        await until(pilot, lambda: not matches.display)
        assert {r.owner for r in screen.rows} == {"omar.haddad"}
        assert "owner omar.haddad" in str(screen.query_one("#browse-count").render())
        screen.query_one("#filter-owner").value = ""
        screen.query_one("#filter-kind").focus()
        await pilot.pause()
        await pilot.press("p")  # policy, and anti-pattern (a word of it starts with p)
        await until(pilot, lambda: "kind" in str(matches.render()))
        await settle(pilot)
        assert {r.kind for r in screen.rows} == {"anti-pattern", "policy"}
        assert "kind “p” matches 2: anti-pattern, policy" in str(matches.render())
