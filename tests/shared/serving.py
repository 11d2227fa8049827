"""A ``hopweave serve`` process started by a test or benchmark: waiting until it is ready, and
stopping it the way an operator does (SIGTERM, then a bounded wait for its clean shutdown: queued
traces written, worker copies removed)."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from typing import Any

__all__ = ["hold_retrievals", "stop_serve", "wait_ready"]


def stop_serve(proc: "subprocess.Popen[str] | subprocess.Popen[bytes]", timeout_s: float = 90.0) -> None:
    """Send SIGTERM to ``proc`` and wait at most ``timeout_s`` for it to exit; past that it is
    killed and ``subprocess.TimeoutExpired`` is raised (a shutdown that hangs is a failure)."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise


def wait_ready(base: str, proc: "subprocess.Popen[str] | subprocess.Popen[bytes]", timeout_s: float = 180.0) -> bool:
    """Poll ``base``/readyz until it answers 200 (True); False when ``proc`` exits first or
    ``timeout_s`` passes."""
    import httpx

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(f"{base}/readyz", timeout=5).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    return False


def hold_retrievals(engine: Any) -> asyncio.Event:
    """Make ``engine.aretrieve`` wait for the returned event before it retrieves (a test of a
    full service holds its requests in flight this way); ``set()`` it to let them through."""
    release = asyncio.Event()
    real = engine.aretrieve

    async def held(*a: Any, **k: Any) -> Any:
        await release.wait()
        return await real(*a, **k)

    engine.aretrieve = held
    return release
