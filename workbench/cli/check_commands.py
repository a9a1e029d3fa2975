"""``workbench check``: knowledge CI over the golden set (Workbench.check).

Text output is for a CI log: one line per regression (the query, why, the fragments involved
and their owners), one per warning, and a verdict on the last line. Exit codes: 0 no regression
(or the baseline was just written and every query holds its own assertions), 1 regression(s),
2 user error (a bad golden file or baseline among them).
"""

from __future__ import annotations

from typing import Any

import click

from ..errors import UserError
from .inputs import STDIN, input_path, one_stdin
from .options import PRINCIPAL_DEFAULT, as_option, command, json_option, open_workbench
from .render import emit_json


@command("check", "Knowledge CI: run the golden queries and compare them with the stored baseline; exit 1 when "
         "a query's answer got worse (fewer relevant fragments in its top 1, 3 or 10; a relevant fragment "
         "deleted, archived, out of scope, rewritten or no longer served; the query starting or stopping to "
         "abstain) or a query fails its own must_rank, must_contain or expect.",
         "workbench check --update-baseline      # once, and after accepting a change\n"
         "workbench check                        # in CI: exit 1 on a regression\n"
         "workbench check --golden kb/golden.yaml --baseline kb/golden.baseline.json --json")
@click.option("--golden", metavar="FILE", help="golden queries YAML (default: `golden:` of workbench.yaml, else "
              "golden.yaml in the workspace folder; '-' for stdin)")
@click.option("--baseline", metavar="FILE", help="the baseline JSON (default: <golden>.baseline.json next to the "
              "golden file; with --golden -, the workspace golden set's baseline; '-' for stdin, to compare only)")
@click.option("--update-baseline", is_flag=True, help="write the baseline from this run (after showing what "
              "changed since the old one), refitting the calibration on the golden set first; exits 0 unless a "
              "query fails its own assertions")
@as_option(f"whose view the report takes: queries and fragments it may not see are only counted {PRINCIPAL_DEFAULT}; "
           "with neither, everything is shown")
@json_option()
def check(golden, baseline, update_baseline, principal, as_json):
    one_stdin(golden=golden, baseline=baseline)
    if baseline == STDIN and update_baseline:
        raise click.UsageError("--update-baseline writes the baseline: name its file with --baseline FILE, not '-'")
    with input_path(golden, name="golden.yaml") as golden_file, input_path(baseline, name="baseline.json") as \
            baseline_file, open_workbench() as wb:
        if golden == STDIN and baseline is None:   # the stdin golden set is compared with the workspace's baseline
            own = wb.golden_path()
            if own is None:
                raise UserError("with --golden -, name the baseline: --baseline FILE (this workspace has no golden "
                                "set whose baseline to use)", param="baseline")
            baseline_file = str(own.with_name(f"{own.stem}.baseline.json"))
        report = wb.check(golden_file, baseline_file, update_baseline=update_baseline, principal=principal)
    data = report.to_dict()
    if getattr(report, "calibration", None):   # --update-baseline refits the calibration too
        data["calibration"] = report.calibration
    if as_json:
        emit_json(data)
    else:
        out = lines(data)
        if data.get("calibration"):   # before the verdict, which stays the last line
            out[-1:-1] = [f"calibration: {data['calibration']}"]
        print("\n".join(out))
    return report.exit_code


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def _rank(rank: int | None, *, before: bool = False, served: bool = False) -> str:
    if rank is None:
        return "not in the top 10" if before or served else "out of the top 100"
    return f"#{rank}"


def _move(m: dict) -> str:
    owner = f"owner {m['owner'] or 'unknown'}"
    change = m["change"]
    if change == "deleted":
        return f"deleted {m['id']} (was {_rank(m['before'], before=True)}, {owner})"
    if change == "served":
        return f"now served {m['id']} ({_rank(m['after'], served=True)}, {owner})"
    if change == "relevant":
        return f"relevant {m['id']} ({_rank(m['after'], served=True)}, {owner})"
    what = {"lost": "lost", "demoted": "demoted", "entered": "entered the top 3:", "archived": "archived",
            "out of scope": "out of the asker's scope:", "rewritten": "rewritten",
            "not served": "no longer served:"}.get(change, change)
    detail = f"{m['detail']}; " if m.get("detail") else ""
    return f"{what} {m['id']} ({detail}{_rank(m['before'], before=True)} → {_rank(m['after'])}, {owner})"


def _ids(ids: list[str], shown: int = 20) -> str:
    return ", ".join(ids[:shown]) + (f" and {len(ids) - shown} more" if len(ids) > shown else "")


def _plural(n: int, word: str) -> str:
    return f"{n} {word if n == 1 else 'queries' if word == 'query' else word + 's'}"


def lines(data: dict) -> list[str]:
    """The report as a CI log reads it: regressions, warnings, notes, then the verdict."""
    out = []
    for r in data["regressions"]:
        moved = [_move(m) for m in r["moved"]]
        if r["hidden_moves"]:
            moved.append(f"{_plural(r['hidden_moves'], 'fragment')} you may not see")
        why = [*(f"FAILS {f}" for f in r["failed"]), *r["reasons"]]
        out.append(f"REGRESSION {r['id']} \"{_one_line(r['query'])}\" (as {r['principal']}): {'; '.join(why)}"
                   + (f" -- {'; '.join(moved)}" if moved else ""))
    for w in data["warnings"]:
        before, after = (", ".join(x or "(hidden)" for x in top) for top in (w["before"], w["after"]))
        out.append(f"warning {w['id']} \"{_one_line(w['query'])}\": top 3 changed: {before} → {after}")
    if data["new"]:
        out.append(f"new or changed since the baseline (not compared): {_ids(data['new'])}")
    if data["removed"]:
        out.append(f"removed from the golden set: {_ids(data['removed'])}")
    hidden = data["hidden"]
    if any(hidden.values()):
        counted = ", ".join(f"{n} {what}" for what, n in hidden.items() if n)
        out.append(f"in queries you may not see: {counted}")
    out += [f"note: {n}" for n in data.get("notes", ())]
    out.append(_verdict(data))
    return out


def _verdict(data: dict) -> str:
    regressions = len(data["regressions"]) + data["hidden"]["regressions"]
    warnings = len(data["warnings"]) + data["hidden"]["warnings"]
    before, after = data["metrics"]["before"] or {}, data["metrics"]["after"]
    metrics = ", ".join(f"{m} {before[m]:.3f} → {after[m]:.3f}" if before.get(m) is not None
                        else f"{m} {after[m]:.3f}"
                        for m in ("recall@10", "ndcg@10", "mrr@10") if after.get(m) is not None)
    failed = data.get("failed", 0)
    fails = (f"; {_plural(failed, 'query')} {'fails its' if failed == 1 else 'fail their'} golden assertions"
             if failed else "")
    if data["updated"]:
        changed = f"; it had {_plural(regressions, 'regression')} against the old one" if regressions else ""
        head = "check FAILED: " if failed else "check: "
        return (f"{head}baseline written ({_plural(data['queries'], 'query')}) to {data['baseline']}{changed}"
                f"{fails}; {metrics}")
    verdict = "check passed" if not regressions else f"check FAILED: {_plural(regressions, 'regression')}{fails}"
    return (f"{verdict} in {_plural(data['compared'], 'query')} compared with the baseline {data['baseline']}; "
            f"{_plural(warnings, 'top-3 change')}; {metrics}")


COMMANDS = [check]
