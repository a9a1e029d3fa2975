#!/bin/sh
# A small git repository to try `workbench ingest --git` on (the README's tour): a payments-api with
# a CODEOWNERS file, a doc and a Python module, in two commits by people of the sample workspace.
# Usage: sh examples/git/payments-api-repo.sh DIR   (DIR is created; an existing DIR is left as it is)
set -eu
dir=${1:?usage: payments-api-repo.sh DIR}
if [ -e "$dir" ]; then echo "$dir exists: left as it is"; exit 0; fi
mkdir -p "$dir/docs" "$dir/payments"
cd "$dir"
git init -q
commit() {  # commit AUTHOR EMAIL DATE MESSAGE
  GIT_AUTHOR_NAME=$1 GIT_AUTHOR_EMAIL=$2 GIT_AUTHOR_DATE=$3 GIT_COMMITTER_NAME=$1 GIT_COMMITTER_EMAIL=$2 \
    GIT_COMMITTER_DATE=$3 git -c commit.gpgsign=false commit -q -m "$4"
}
cat > CODEOWNERS <<'END'
/docs/     @marco.bianchi
*.py       @marco.bianchi
END
cat > docs/retries.md <<'END'
# Retries in payments-api

## Client retries

Clients retry a failed `POST /payments` with the same `Idempotency-Key` header. The server keeps
each key for 24 hours and answers a retry with the first response.

## Webhook retries

A merchant webhook is retried 5 times with exponential backoff, then parked in the dead-letter queue.
END
cat > payments/retry.py <<'END'
"""Retrying calls to the PSP."""

import random
import time


def backoff_delays(attempts: int, base: float = 0.2, cap: float = 5.0):
    """Exponential backoff with full jitter: one delay per retry."""
    return [random.uniform(0, min(cap, base * 2 ** n)) for n in range(attempts)]


def call_with_retries(call, attempts: int = 3):
    """Call the PSP, retrying on timeout; the same idempotency key is sent every time."""
    for delay in [0.0, *backoff_delays(attempts - 1)]:
        time.sleep(delay)
        try:
            return call()
        except TimeoutError:
            continue
    raise TimeoutError("PSP did not answer")
END
git add CODEOWNERS docs payments
commit "Marco Bianchi" marco.bianchi@northwind.example 2026-03-02T10:00:00 "retries: docs and the PSP retry helper"
printf '\nA retry after the key expired is a new payment: see ADR-0007.\n' >> docs/retries.md
git add docs/retries.md
commit "Marco Bianchi" marco.bianchi@northwind.example 2026-05-11T15:30:00 "docs: what happens after a key expires"
echo "made a git repository at $dir (2 commits)"
