"""The JSON of a fixed set of retrievals on both example packs, timings removed: a behaviour
snapshot to compare two versions of the engine by.

Each pack is loaded into a fresh store directory (DeltaBank through its generator at 3,000 nodes,
the population its scenarios name; Acme Mobile from its files) and served by one engine with the
replay configuration (deterministic budgets). The retrievals per pack: every scenario (faults
injected as declared), then the pack's held-out utterances (``utterances/test.yaml``) with its
session files in turn, at one fixed ``as_of``, until ``--count`` retrievals. Nothing is recorded.

    python tools/retrieval_snapshot.py --out /tmp/before.json          # write a snapshot
    python tools/retrieval_snapshot.py --check /tmp/before.json        # compare; exit 1 on a change

Each line of the output is one retrieval (``pack``, index, the request, the result's JSON without
``timings_ms``), so a diff names the request that changed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
AS_OF = "2026-03-15T12:00:00Z"
#: Fields that measure the run, not what it returned (dropped at every depth).
TIMED = frozenset({"timings_ms", "elapsed_ms"})


def _requests(pack: Path, count: int) -> Iterator[tuple[str, Any]]:
    """(label, scenario or (utterance, session)) of one pack, ``count`` in all."""
    from hopweave.engine.replay import load_scenario, scenario_paths
    from hopweave.fileio import read_yaml
    from hopweave.models.common import read_session_file

    n = 0
    for p in scenario_paths([pack / "scenarios"]):
        if n == count:
            return
        n += 1
        yield f"scenario {p.name}", load_scenario(p)
    utterances = [u["text"] for u in read_yaml(pack / "utterances" / "test.yaml", "utterances")]
    sessions = [read_session_file(p) for p in sorted((pack / "sessions").glob("*.json"))]
    i = 0
    while n < count:
        text, session = utterances[i % len(utterances)], sessions[i % len(sessions)]
        i += 1
        n += 1
        yield f"utterance {text!r} as {session.customer_id}", (text, session)


def _untimed(data: Any) -> Any:
    """``data`` without the :data:`TIMED` fields, at every depth."""
    if isinstance(data, dict):
        return {k: _untimed(v) for k, v in data.items() if k not in TIMED}
    if isinstance(data, list):
        return [_untimed(v) for v in data]
    return data


def _load(pack: Path, store: Path) -> None:
    """The pack into a new store directory ``store``."""
    if pack.name == "deltabank":
        sys.path.insert(0, str(pack))
        from generator.build import load_deltabank

        load_deltabank(store, nodes=3000)
    else:
        from hopweave.pack.loader import load_pack

        load_pack(pack, store)


def _snapshot(pack: Path, store: Path, count: int) -> list[str]:
    from hopweave.engine.engine import Engine
    from hopweave.engine.replay import REPLAY_CONFIG, Scenario, run_scenario

    if not store.exists():
        _load(pack, store)
    lines = []
    with Engine.open(store, config=REPLAY_CONFIG) as engine:
        engine.warmup()
        for i, (label, item) in enumerate(_requests(pack, count)):
            if isinstance(item, Scenario):
                result = run_scenario(engine, item, record=False)
            else:
                text, session = item
                result = engine.retrieve(text, session=session, as_of=AS_OF, record=False)
            data = _untimed(result.model_dump(mode="json"))
            lines.append(json.dumps({"pack": pack.name, "i": i, "request": label, "result": data}, sort_keys=True))
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=200, help="retrievals per pack (default 200)")
    ap.add_argument("--out", type=Path, help="write the snapshot here")
    ap.add_argument("--check", type=Path, help="compare with this snapshot; exit 1 when any retrieval differs")
    ap.add_argument("--stores", type=Path, help="keep the loaded stores here and reuse them on the next run "
                    "(default: fresh ones in a temporary directory); two fresh loads can differ in the "
                    "last digit of a semantic score, so compare versions on the same stores")
    args = ap.parse_args(argv)
    lines: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = args.stores if args.stores is not None else Path(tmp)
        for pack in ("deltabank", "telecom"):
            lines += _snapshot(EXAMPLES / pack, root / pack / "store", args.count)
    text = "\n".join(lines) + "\n"
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
        print(f"wrote {len(lines)} retrievals to {args.out}")
    if args.check is not None:
        before = args.check.read_text(encoding="utf-8").splitlines()
        changed = [b for b, a in zip(before, lines) if a != b]
        if len(before) != len(lines) or changed:
            for b in changed[:5]:
                print("changed:", json.loads(b)["request"])
            print(f"{len(changed)} of {len(before)} retrievals differ ({len(lines)} now)")
            return 1
        print(f"{len(lines)} retrievals identical to {args.check}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
