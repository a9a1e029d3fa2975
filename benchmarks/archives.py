"""The sample's compressed archive and what --include-archived costs (BENCHMARKS.md, issue 31).

    python benchmarks/archives.py WORKSPACE     # a workspace built by `make workspace DEMO=WORKSPACE`
"""

from __future__ import annotations

import statistics
import sys
import time

from workbench import Workbench

SUMMARY = "tw-ss-archive-org-tidewater-repo-dispatch"


def main(root: str) -> None:
    with Workbench.open(root) as wb:
        s = wb.store.get(SUMMARY)
        refs = s.content.detail("compressed_from")
        lines = [line for line in s.body.splitlines() if line.startswith("- ")]
        source_words = sum(len(wb.store.version(r.split("@v")[0], int(r.split("@v")[1])).content.body.split())
                           for r in refs)
        print(f"sources {len(refs)}, source words {source_words}; summary sentences {len(lines)}, "
              f"cited-sentence words {sum(len(line.split()) - 2 for line in lines)}, body words {len(s.body.split())}")
        wb.warm()
        wb.search("warm up", principal="raj.patel")
        t = time.perf_counter()
        wb.search("first archived call", principal="raj.patel", include_archived=True)
        first = time.perf_counter() - t
        queries = [f"partner callbacks failing every night around {i} am" for i in range(30)]
        for flag in (False, True):
            times = []
            for q in queries:
                t = time.perf_counter()
                wb.search(q + (" again" if flag else ""), principal="raj.patel", include_archived=flag)
                times.append((time.perf_counter() - t) * 1000)
            print(f"include_archived={flag}: search p50 {statistics.median(times):.1f} ms")
        print(f"first include-archived call of the generation (builds its index): {first * 1000:.0f} ms")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".workbench")
