"""Background threads of a process that also answers requests (the team server): index builds,
the trace writer and its checkpoints run at a lower CPU priority than the threads answering, so
on a machine with fewer cores than runnable threads the scheduler gives a reader the core first.

Linux lets a thread raise its own nice value (``setpriority`` on its thread id); elsewhere, or
where that is refused, nothing changes. A thread cannot lower it again without privileges, so
this is only for threads that do background work and nothing else."""

from __future__ import annotations

import os
import threading

NICE = 10


def lower_priority() -> bool:
    """Lower the calling thread's CPU priority (nice +NICE); False where the OS does not allow it."""
    if threading.current_thread() is threading.main_thread():
        return False  # on Linux the main thread's id is the process's: never slow the whole process
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)
    except (AttributeError, OSError):
        return False
    return True
