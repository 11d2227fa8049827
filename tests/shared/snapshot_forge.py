"""Rewriting a format-3 or format-4 graph snapshot (``graph._columns``) for tests: sections replaced, the
header's layout and sha256 made to match, so that the store's own checks must catch the change."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from hopweave.graph import _persist as P
from hopweave.graph._columns import SECTIONS


def parts(d: Path) -> tuple[dict[str, Any], bytes]:
    raw = (d / P.SNAPSHOT).read_bytes()
    head, payload = raw.split(b"\n", 1)
    return json.loads(head), payload


def section(header: dict[str, Any], payload: bytes, name: str) -> bytes:
    at, n = header["sections"][name]
    return payload[at:at + n]


def forge(d: Path, replace: dict[str, bytes], **header_over: Any) -> None:
    """Rewrite the snapshot with some sections replaced and a matching sha256."""
    header, payload = parts(d)
    chunks, sections, at = [], {}, 0
    for name in [s for s in SECTIONS if s in header["sections"]]:
        raw = replace.get(name, section(header, payload, name))
        sections[name] = [at, len(raw)]
        chunks.append(raw)
        at += len(raw)
    body = b"".join(chunks)
    header.update(sections=sections, payload_len=len(body), payload_sha256=hashlib.sha256(body).hexdigest())
    header.update(header_over)
    (d / P.SNAPSHOT).write_bytes(json.dumps(header).encode() + b"\n" + body)


def array(d: Path, name: str) -> np.ndarray:
    header, payload = parts(d)
    return np.frombuffer(section(header, payload, name), dtype=SECTIONS[name]).copy()


def meta(d: Path, **over: Any) -> bytes:
    header, payload = parts(d)
    meta = json.loads(section(header, payload, "meta"))
    meta.update(over)
    return json.dumps(meta).encode()


def set_value(d: Path, name: str, i: int, value: int) -> bytes:
    a = array(d, name)
    a[i] = value
    return a.tobytes()


def props_of(d: Path, nid: str, change: dict[str, Any]) -> dict[str, bytes]:
    """The props and props_off sections with node ``nid``'s attributes changed."""
    header, payload = parts(d)
    ids = json.loads(section(header, payload, "ids"))
    off = array(d, "props_off")
    blob = section(header, payload, "props")
    objs = [json.loads(blob[off[i]:off[i + 1]]) for i in range(len(ids))]
    objs[ids.index(nid)].update(change)
    raws = [json.dumps(o).encode() for o in objs]
    return {"props": b"".join(raws), "props_off": np.cumsum([0] + [len(r) for r in raws]).astype("<i8").tobytes()}


def write_older_format(store: Any, fmt: int = P.JSON_FORMAT) -> None:
    """Rewrite an open NetworkxGraphStore's snapshot in format 2 (one JSON object, what older
    hopweave versions wrote; or ``fmt`` 3, columns without the ids' order) with everything
    committed so far: a store to convert."""
    store._st.thaw()  # every node as a dict: what a format-2 snapshot is written from
    st = store._st
    P.write_snapshot(store.directory, st.node, st.succ, {"last_seq": store._seq, "nodes": st.node_count,
                                                         "edges": st.edge_count, "schema_version": store.schema.version},
                     fmt=fmt)
