"""``workbench ARGS`` for tests/test_readme_tour.py: the README's tour runs in a real bash, whose
``workbench`` is a function calling this script, which hands the command (its argv, folder, the
WORKBENCH_* and EDITOR variables, its standard input) to the test process over a Unix socket. The
test runs it in-process (the model loaded once) and this script prints its output and exits with its
code. Standard library only: it starts in milliseconds."""

import json
import os
import socket
import sys

env = {k: v for k, v in os.environ.items() if k.startswith("WORKBENCH_") or k == "EDITOR"}
stdin = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()
request = json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(), "env": env, "stdin": stdin}).encode()
with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
    s.connect(os.environ["TOUR_SOCKET"])
    s.sendall(request)
    s.shutdown(socket.SHUT_WR)
    answer = json.loads(b"".join(iter(lambda: s.recv(65536), b"")).decode())
sys.stdout.write(answer["stdout"])
sys.stderr.write(answer["stderr"])
sys.exit(answer["code"])
