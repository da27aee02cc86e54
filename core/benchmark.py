"""Measuring benchmarks: shared by every benchmark command. Pure module (no Django)."""

from __future__ import annotations

import resource


def peak_memory_mb() -> float:
    """This process's peak resident memory (VmHWM): unlike ``ru_maxrss``, not inherited across fork."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
