"""Frames and errors between hopweave processes (the engine pool's workers, the search process).

A frame is a 4-byte big-endian length, then a JSON header line, then an optional body of raw
bytes (``frame`` / ``read_frame``); nothing is ever unpickled. A :class:`HopweaveError` crosses
as its class name, message and plain attributes (``error_json``) and is raised again on the other
side as the same class (``error_from_json``); any other exception becomes a WorkerError naming the
process and the original type.
"""

from __future__ import annotations

import json
import queue
import socket
import struct
from typing import Any, Callable, Mapping

from hopweave import errors as hw_errors
from hopweave.errors import HopweaveError, WorkerError

__all__ = ["MAX_FRAME", "error_from_json", "error_json", "frame", "read_frame", "recv_exact", "send_loop"]

_LEN = struct.Struct(">I")
#: The largest frame either side accepts (a result with a 2,000-token context is ~50 KB).
MAX_FRAME = 64 * 1024 * 1024


def frame(header: Mapping[str, Any], body: bytes = b"") -> bytes:
    data = json.dumps(header, separators=(",", ":")).encode() + b"\n" + body
    return _LEN.pack(len(data)) + data


def recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        part = sock.recv(n - len(buf))
        if not part:
            raise EOFError("the other end closed the socket")
        buf += part
    return bytes(buf)


def read_frame(sock: socket.socket) -> tuple[dict[str, Any], bytes]:
    (n,) = _LEN.unpack(recv_exact(sock, _LEN.size))
    if n > MAX_FRAME:
        raise EOFError(f"frame of {n} bytes is over the {MAX_FRAME}-byte limit")
    data = recv_exact(sock, n)
    head, _, body = data.partition(b"\n")
    return json.loads(head), body


def send_loop(sock: socket.socket, out: "queue.SimpleQueue[Any]", frame_of: "Callable[[Any], bytes | None]") -> None:
    """Send ``frame_of(item)`` for each queued item in order (None: skip it) until a None item
    or the socket breaks. Each side writes through this on a thread of its own."""
    while True:
        item = out.get()
        if item is None:
            return
        data = frame_of(item)
        if data is None:
            continue
        try:
            sock.sendall(data)
        except OSError:
            return


def error_json(exc: BaseException) -> dict[str, Any]:
    """An exception as JSON: its class name, message and JSON-able attributes."""
    attrs = {}
    for k, v in vars(exc).items():
        if isinstance(v, (str, int, float, bool)) or v is None:
            attrs[k] = v
    return {"type": type(exc).__name__, "hopweave": isinstance(exc, HopweaveError),
            "message": str(exc), "attrs": attrs}


def error_from_json(data: Mapping[str, Any], process: str) -> HopweaveError:
    """The same HopweaveError class, message and attributes as in the other process; WorkerError
    for anything else (a bug: the message names the process and the original type)."""
    cls = getattr(hw_errors, str(data.get("type")), None)
    if data.get("hopweave") and isinstance(cls, type) and issubclass(cls, HopweaveError):
        exc = cls.__new__(cls)
        Exception.__init__(exc, data.get("message", ""))
        for k, v in (data.get("attrs") or {}).items():
            setattr(exc, k, v)
        return exc
    return WorkerError(f"{process} raised {data.get('type')}: {data.get('message')}")
