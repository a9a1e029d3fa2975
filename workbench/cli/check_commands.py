"""``workbench check``: knowledge CI over the golden set (Workbench.check).

Text output is for a CI log: one line per regression (the query, why, the fragments that moved
and their owners), one per warning, and a verdict on the last line. Exit codes: 0 no regression
(or the baseline was just written), 1 regression(s), 2 user error.
"""

from __future__ import annotations

from typing import Any

import click

from ..errors import UserError
from .inputs import STDIN, input_path, one_stdin
from .options import PRINCIPAL_DEFAULT, as_option, command, json_option, open_workbench
from .render import emit_json


@command("check", "Knowledge CI: run the golden queries and compare them with the stored baseline; exit 1 when "
         "a query's recall@10 dropped or its first relevant hit fell out of the top 3.",
         "workbench check --update-baseline      # once, and after accepting a change\n"
         "workbench check                        # in CI: exit 1 on a regression\n"
         "workbench check --golden kb/golden.yaml --baseline kb/golden.baseline.json --json")
@click.option("--golden", metavar="FILE", help="golden queries YAML (default: `golden:` of workbench.yaml, else "
              "golden.yaml in the workspace folder; '-' for stdin)")
@click.option("--baseline", metavar="FILE", help="the baseline JSON (default: <golden>.baseline.json next to the "
              "golden file; with --golden -, the workspace golden set's baseline; '-' for stdin, to compare only)")
@click.option("--update-baseline", is_flag=True, help="write the baseline from this run (after showing what "
              "changed since the old one); exits 0")
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
    if as_json:
        emit_json(data)
    else:
        print("\n".join(lines(data)))
    return report.exit_code


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def _rank(rank: int | None, *, before: bool = False) -> str:
    if rank is None:
        return "not in the top 10" if before else "out of the top 100"
    return f"#{rank}"


def _move(m: dict) -> str:
    what = {"lost": "lost", "demoted": "demoted", "entered": "entered the top 3:"}[m["change"]]
    return (f"{what} {m['id']} ({_rank(m['before'], before=True)} → {_rank(m['after'])}, "
            f"owner {m['owner'] or 'unknown'})")


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
        out.append(f"REGRESSION {r['id']} \"{_one_line(r['query'])}\" (as {r['principal']}): {'; '.join(r['reasons'])}"
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
    out.append(_verdict(data))
    return out


def _verdict(data: dict) -> str:
    regressions = len(data["regressions"]) + data["hidden"]["regressions"]
    warnings = len(data["warnings"]) + data["hidden"]["warnings"]
    before, after = data["metrics"]["before"] or {}, data["metrics"]["after"]
    metrics = ", ".join(f"{m} {before[m]:.3f} → {after[m]:.3f}" if before.get(m) is not None
                        else f"{m} {after[m]:.3f}"
                        for m in ("recall@10", "ndcg@10", "mrr@10") if after.get(m) is not None)
    if data["updated"]:
        changed = f"; it had {_plural(regressions, 'regression')} against the old one" if regressions else ""
        return (f"check: baseline written ({_plural(data['queries'], 'query')}) to {data['baseline']}{changed}; "
                f"{metrics}")
    verdict = "check passed" if not regressions else f"check FAILED: {_plural(regressions, 'regression')}"
    return (f"{verdict} in {_plural(data['compared'], 'query')} compared with the baseline {data['baseline']}; "
            f"{_plural(warnings, 'top-3 change')}; {metrics}")


COMMANDS = [check]
