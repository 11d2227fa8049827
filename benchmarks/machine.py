"""What machine a benchmark ran on: one description shared by every benchmark's report."""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any


def machine() -> dict[str, Any]:
    """CPU model, core count, RAM (GiB), Python, OS and the 1-minute load average now."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {"cpu": cpu, "nproc": os.cpu_count(), "ram_gib": round(mem, 1), "python": platform.python_version(),
            "os": platform.system(), "load_avg_start": round(os.getloadavg()[0], 2)}


def machine_line() -> str:
    m = machine()
    return f"{m['cpu']}, {m['nproc']} cores, {m['ram_gib']:.0f} GiB RAM, Python {m['python']}, {m['os']}"
