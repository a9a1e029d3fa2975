"""The team server's gate over the real core (a real DuckDB workspace, in this process): a flood of
wrong tokens never locks a good one out, it costs no store read, the brake counts per address and
per token id with bounded memory, and a revocation through the core refuses the token on the very
next check. (tests/test_server.py does the same against a real server process.)"""

from __future__ import annotations

import pytest

from workbench.server import auth
from workbench.server.auth import Gate, Refused

OWNER = "wbo_" + "o" * 43


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def gate_for(wb, clock=None) -> Gate:
    wb.load_tokens()
    return Gate(wb.identify, wb.record_token_use, OWNER, clock=clock or Clock())


def status(gate: Gate, token: str | None, client: str = "127.0.0.1") -> int:
    try:
        gate.check(None if token is None else f"Bearer {token}", client)
    except Refused as e:
        return e.status
    return 200


def test_a_flood_of_wrong_tokens_never_refuses_a_good_one(wb, monkeypatch):
    agent = wb.token_create("agent.nw-coder").token
    curator = wb.token_create("marco.bianchi").token
    admin = wb.token_create("priya.raman").token
    gate = gate_for(wb)

    def no_store(*a, **kw):
        raise AssertionError("a token check read the store")

    monkeypatch.setattr(wb.store, "token_row", no_store)  # every check is answered from memory
    monkeypatch.setattr(wb.store, "token_rows", no_store)
    flood = [status(gate, f"wbt_{i:012x}_{'x' * 43}") for i in range(1000)]
    assert flood[:auth.BUDGET] == [401] * auth.BUDGET and set(flood[auth.BUDGET:]) == {429}
    # none of the good tokens had been used before the flood (nothing remembered them)
    assert [status(gate, t) for t in (agent, curator, admin, OWNER)] == [200] * 4
    assert status(gate, None) == 401  # no token at all: 401, never braked
    assert status(gate, "garbage", client="10.0.0.9") == 401  # another address has its own count


def test_guesses_at_one_token_id_are_braked_from_every_address(wb):
    good = wb.token_create("marco.bianchi")
    gate = gate_for(wb)
    secret = good.token.split("_", 2)[2]
    wrong = f"wbt_{good.id}_{'A' if secret[0] != 'A' else 'B'}{secret[1:]}"
    got = [status(gate, wrong, client=f"10.0.{i // 250}.{i % 250}") for i in range(auth.BUDGET + 3)]
    assert got == [401] * auth.BUDGET + [429] * 3  # one guess per address, the id's count still adds up
    assert status(gate, good.token, client="10.9.9.9") == 200  # the token itself still works
    assert status(gate, f"wbt_{'f' * 12}_{'x' * 43}", client="10.9.9.9") == 401  # other ids: not braked


def test_the_brake_lets_go_after_the_window_and_its_memory_is_bounded(wb, monkeypatch):
    clock = Clock()
    gate = gate_for(wb, clock)
    assert [status(gate, "nope") for _ in range(auth.BUDGET + 1)][-1] == 429
    clock.now += auth.WINDOW_S + 1
    assert status(gate, "nope") == 401
    monkeypatch.setattr(auth, "MAX_TRACKED", 50)
    for i in range(500):
        status(gate, f"wbt_{i:012x}_guess", client=f"10.1.{i // 250}.{i % 250}")
    assert len(gate._by_address) <= 51 and len(gate._by_id) <= 51
    assert all(len(times) <= auth.BUDGET for times in gate._by_address.values())


def test_a_revocation_refuses_the_token_at_the_next_check(wb):
    issued = wb.token_create("marco.bianchi")
    gate = gate_for(wb)
    assert status(gate, issued.token) == 200
    wb.token_revoke(issued.id, actor="marco.bianchi")  # any path to the core: the same view
    assert status(gate, issued.token) == 401
    later = wb.token_create("sofia.okafor")  # created after the view was read: known at once
    assert status(gate, later.token) == 200


def test_a_use_is_recorded_once_a_minute_off_the_check(wb):
    issued = wb.token_create("marco.bianchi")
    gate = gate_for(wb)
    first = gate.check(f"Bearer {issued.token}", "127.0.0.1")
    assert first.caller == auth.Caller("marco.bianchi", False) and first.record is not None
    assert wb.store.token_row(issued.id).last_used_at is None  # the check itself writes nothing
    first.record()
    assert wb.store.token_row(issued.id).last_used_at is not None
    assert gate.check(f"Bearer {issued.token}", "127.0.0.1").record is None  # claimed for the minute


@pytest.mark.parametrize("header", ["Basic abc", "Bearer", "bearer  "])
def test_a_malformed_header_is_a_failure_not_a_missing_token(wb, header):
    gate = gate_for(wb)
    with pytest.raises(Refused) as err:
        gate.check(header, "127.0.0.1")
    assert err.value.status == 401 and err.value.reason == "malformed"
