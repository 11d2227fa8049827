"""A ``hopweave serve`` process started by a test or benchmark: waiting until it is ready, and
stopping it the way an operator does (SIGTERM, then a bounded wait for its clean shutdown: queued
traces written, worker copies removed)."""

from __future__ import annotations

import signal
import subprocess
import time

__all__ = ["stop_serve", "wait_ready"]


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
