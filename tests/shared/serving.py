"""Stopping a ``hopweave serve`` process started by a test or benchmark the way an operator does:
SIGTERM, then a bounded wait for its clean shutdown (queued traces written, worker copies removed)."""

from __future__ import annotations

import signal
import subprocess

__all__ = ["stop_serve"]


def stop_serve(proc: "subprocess.Popen[str] | subprocess.Popen[bytes]", timeout_s: float = 90.0) -> None:
    """Send SIGTERM to ``proc`` and wait at most ``timeout_s`` for it to exit; past that it is
    killed and ``subprocess.TimeoutExpired`` is raised (a shutdown that hangs is a failure)."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
