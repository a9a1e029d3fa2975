"""Request counts and latency histograms per endpoint, in the Prometheus text format.

In-process and lock-protected (requests finish on many threads); no client library: the text
format is a few lines. Gauges (index generation, fragments, traces) are read when scraped. Every
metric has its HELP and TYPE lines.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from typing import Callable

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# Every metric has HELP and TYPE (``promtool check metrics`` accepts the page; a test runs it).
GAUGES = {"index_generation": "The generation of the workspace's data the search index serves (it moves with "
                              "every write).",
          "fragments": "Fragments stored in the workspace, every status.",
          "traces": "Retrieval calls (search, context, get) traced in the workspace."}


class Metrics:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: dict[tuple[str, str], int] = defaultdict(int)   # (endpoint, status) -> count
        self._buckets: dict[str, list[int]] = {}                         # endpoint -> counts per bucket
        self._sum: dict[str, float] = defaultdict(float)
        self._count: dict[str, int] = defaultdict(int)
        self._auth_failures: dict[str, int] = defaultdict(int)           # reason -> count

    def observe(self, endpoint: str, status: int, seconds: float) -> None:
        with self._lock:
            self._requests[(endpoint, str(status))] += 1
            buckets = self._buckets.setdefault(endpoint, [0] * len(BUCKETS))
            for i, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    buckets[i] += 1
            self._sum[endpoint] += seconds
            self._count[endpoint] += 1

    def auth_failed(self, reason: str) -> None:
        with self._lock:
            self._auth_failures[reason] += 1

    def render(self, gauges: Callable[[], dict[str, float]]) -> str:
        lines = ["# HELP workbench_requests_total Requests answered, by endpoint and HTTP status.",
                 "# TYPE workbench_requests_total counter"]
        with self._lock:
            for (endpoint, status), n in sorted(self._requests.items()):
                lines.append(f'workbench_requests_total{{endpoint="{_esc(endpoint)}",status="{status}"}} {n}')
            lines += ["# HELP workbench_request_seconds Time to answer a request, by endpoint.",
                      "# TYPE workbench_request_seconds histogram"]
            for endpoint, buckets in sorted(self._buckets.items()):
                label = f'endpoint="{_esc(endpoint)}"'
                for bound, n in zip(BUCKETS, buckets):
                    lines.append(f'workbench_request_seconds_bucket{{{label},le="{bound}"}} {n}')
                lines.append(f'workbench_request_seconds_bucket{{{label},le="+Inf"}} {self._count[endpoint]}')
                lines.append(f"workbench_request_seconds_sum{{{label}}} {self._sum[endpoint]:.6f}")
                lines.append(f"workbench_request_seconds_count{{{label}}} {self._count[endpoint]}")
            lines += ["# HELP workbench_auth_failures_total Requests refused for authentication, by reason.",
                      "# TYPE workbench_auth_failures_total counter"]
            for reason, n in sorted(self._auth_failures.items()):
                lines.append(f'workbench_auth_failures_total{{reason="{_esc(reason)}"}} {n}')
        for name, value in gauges().items():
            text = GAUGES.get(name, f"The workspace's {name.replace('_', ' ')}.")
            lines += [f"# HELP workbench_{name} {text}", f"# TYPE workbench_{name} gauge", f"workbench_{name} {value}"]
        return "\n".join(lines) + "\n"


def _esc(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
