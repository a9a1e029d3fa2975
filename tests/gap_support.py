"""Traces of unanswerable questions, for the gap report's tests (test_gaps.py, test_tui_gaps.py):
the sample golden set's negative queries run through ``context`` as their principals, then some
near-duplicate rephrasings of three of them by other principals (one in a repo scope)."""

from __future__ import annotations

import re
import shutil
from datetime import datetime, timedelta
from pathlib import Path

import yaml

from conftest import SAMPLE

NEGATIVES = [q for q in yaml.safe_load((SAMPLE / "golden.yaml").read_text(encoding="utf-8"))["queries"]
             if q.get("type") == "negative"]
BY_ID = {q["id"]: q for q in NEGATIVES}

# family → (the negative it rephrases, [(rephrasing, principal, scope)])
REPHRASINGS = {
    "parental leave": ("neg-q005", [("how much parental leave do engineers get", "omar.haddad", None),
                                    ("what's the parental leave policy for our engineers", "marco.bianchi", None),
                                    ("parental leave policy for engineering staff", "agent.nw-coder", None)]),
    "driver app in Polish": ("neg-q017", [("how do we localise the driver app into Polish", "agent.tw-ops", None),
                                          ("translating the driver app to Polish", "raj.patel", None)]),
    "JVM garbage collector": ("neg-q014", [
        ("how do I tune JVM garbage collection for the payments service", "dan.kowalski", None),
        ("JVM GC tuning for the payments service", "agent.nw-coder", "org=northwind,repo=payments-api")]),
}
NORTHWIND = {"priya.raman", "marco.bianchi", "sofia.okafor", "dan.kowalski", "hannah.lee", "omar.haddad",
             "agent.nw-coder"}
TIDEWATER = {"lena.fischer", "raj.patel", "emma.novak", "tomas.silva", "agent.tw-ops"}


def run_questions(wb, start: datetime) -> dict:
    """Ask every negative, then every rephrasing, through ``context`` one minute apart from ``start``.
    Returns {"abstained": negative ids that abstained, "answered": those that did not,
    "rephrased": family → the rephrasings' (text, principal, scope)}; a rephrasing that does not
    abstain fails here (the tests are built on it)."""
    at = start
    abstained, answered = [], []
    for q in NEGATIVES:
        result = wb.context(q["query"], principal=q["principal"], now=at)
        (abstained if result.abstained else answered).append(q["id"])
        at += timedelta(minutes=1)
    for family, (_, asked) in REPHRASINGS.items():
        for text, principal, scope in asked:
            result = wb.context(text, principal=principal, scope=scope, now=at)
            assert result.abstained, (family, text)
            at += timedelta(minutes=1)
    for family, (neg, _) in REPHRASINGS.items():
        assert neg in abstained, (family, neg)
    return {"abstained": abstained, "answered": answered}


def without_default_principal(workspace: Path) -> None:
    """Drop ``default_principal`` from the workspace's workbench.yaml: without ``--as``, reports
    then take the local administrator's view."""
    config = workspace / "workbench.yaml"
    config.write_text(re.sub(r"(?m)^default_principal:.*$", "", config.read_text(encoding="utf-8")),
                      encoding="utf-8")


def traced_copy(template: Path, target: Path) -> Path:
    shutil.copytree(template, target)
    return target
