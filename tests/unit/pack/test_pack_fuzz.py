"""Seeded fuzzing over packs: ``validate`` and ``load`` agree, nothing is read from outside the
pack, and no input gives a raw traceback.

Each case copies a base pack (the starter pack of ``hopweave init``, or for some cases the
telecom example), applies one to three mutations drawn with a seeded RNG (symlinks out of the
pack, manifest paths leaving it, tenants the store cannot hold, duplicate goals, unknown link
values and domain settings, broken sessions, scenarios, classifier settings, schemas, graph
files and corpus documents, oversized files, random byte edits of any text file, deleted YAML
keys, and benign edits), then:

* ``validate_pack`` returns problems (never raises anything but for a missing folder);
* ``load_pack`` refuses with the same problems when there are any (its pre-check, writing
  nothing), and otherwise loads: a real load with vectors (the one process-wide embedder) for the
  starter pack; for telecom everything a load reads (pack, graph, metagraph and document items)
  without the store writes, which would embed its corpus;
* while both run, an audit hook records every file opened and folder listed: none is inside the
  folder the symlinks point to, nor ``/etc/passwd``.

``HOPWEAVE_PACK_FUZZ_CASES`` sets the number of cases (default 30, about 40-60 s on the shared
2-core machine). The full run of 200 cases (seed 34): all 200 agree, 172 refused by both, 28
loaded, 0 files read outside the pack, 184 s wall (docs/BENCHMARKS.md, "Pack validation and
fuzzing").
``HOPWEAVE_PACK_FUZZ_SEED`` sets the seed (default 34).
"""

from __future__ import annotations

import gzip
import json
import os
import random
import shutil
import sys
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from hopweave.errors import HopweaveError
from hopweave.pack.init import init_pack
from hopweave.pack.loader import (
    PackInvalidError,
    document_items,
    graph_items,
    load_pack,
    metagraph_items,
    read_pack,
)
from hopweave.pack.validate import validate_pack

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
TELECOM = ROOT / "examples" / "telecom"
CASES = int(os.environ.get("HOPWEAVE_PACK_FUZZ_CASES", "30"))
SEED = int(os.environ.get("HOPWEAVE_PACK_FUZZ_SEED", "34"))
#: Files a mutation may point a symlink at, besides the outside folder.
SYSTEM_TARGETS = ("/etc/passwd",)

# ---- what the process reads ------------------------------------------------------------------
_RECORD: list[str] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _RECORD is None or event not in ("open", "os.listdir", "os.scandir"):
        return
    target = args[0] if args else None
    if isinstance(target, (str, bytes, os.PathLike)):
        _RECORD.append(os.fsdecode(target))


sys.addaudithook(_audit)


class _Reads:
    """Records the paths opened or listed inside the ``with`` block."""

    def __enter__(self) -> list[str]:
        global _RECORD
        _RECORD = []
        return _RECORD

    def __exit__(self, *exc: object) -> None:
        global _RECORD
        _RECORD = None


def _escaped(paths: list[str], outside: Path) -> list[str]:
    out = []
    for p in paths:
        real = os.path.realpath(p)
        if real in SYSTEM_TARGETS or real == str(outside) or real.startswith(str(outside) + os.sep):
            out.append(p)
    return out


# ---- mutations -------------------------------------------------------------------------------
Mutation = Callable[[random.Random, Path, Path], str]


def _files(d: Path, suffixes: tuple[str, ...] = (".yaml", ".json", ".jsonl", ".md")) -> list[Path]:
    return sorted(p for p in d.rglob("*") if p.is_file() and not p.is_symlink() and p.name.endswith(suffixes))


def _manifest(d: Path) -> dict[str, Any]:
    return yaml.safe_load((d / "hopweave.yaml").read_text(encoding="utf-8"))


def _write_manifest(d: Path, m: dict[str, Any]) -> None:
    (d / "hopweave.yaml").write_text(yaml.safe_dump(m, sort_keys=False), encoding="utf-8")


def _target(rng: random.Random, outside: Path) -> Path:
    return Path(rng.choice([*SYSTEM_TARGETS, str(outside / "secret.md"), str(outside / "secret.jsonl"),
                            str(outside / "secret.yaml")]))


def m_symlink_file(rng: random.Random, d: Path, outside: Path) -> str:
    folder = rng.choice(["corpus", "goals", "sessions", "scenarios", "utterances"])
    ext = {"corpus": ".md", "goals": ".yaml", "sessions": ".json", "scenarios": ".yaml", "utterances": ".yaml"}[folder]
    (d / folder).mkdir(exist_ok=True)
    t = _target(rng, outside)
    os.symlink(t, d / folder / f"linked{ext}")
    return f"symlink {folder}/linked{ext} -> {t}"


def m_symlink_replace(rng: random.Random, d: Path, outside: Path) -> str:
    f = rng.choice(_files(d))
    shutil.copy(f, outside / f"copy_{f.name}")
    f.unlink()
    os.symlink(outside / f"copy_{f.name}", f)
    return f"{f.relative_to(d)} replaced by a symlink to a copy outside"


def m_symlink_dir(rng: random.Random, d: Path, outside: Path) -> str:
    folder = rng.choice(["corpus", "goals", "graph", "scenarios", "sessions"])
    if rng.random() < 0.5 and (d / folder).is_dir():
        dest = outside / f"moved_{folder}"
        shutil.move(str(d / folder), dest)
        os.symlink(dest, d / folder)
        return f"{folder}/ moved outside and symlinked back"
    (d / folder).mkdir(exist_ok=True)
    os.symlink(outside, d / folder / "sub")
    return f"{folder}/sub -> outside folder"


def m_manifest_path(rng: random.Random, d: Path, outside: Path) -> str:
    m = _manifest(d)
    key = rng.choice(["schema", "goals", "filters", "classifier", "sessions", "scenarios", "utterances", "corpus"])
    value = rng.choice(["/etc/", "../", str(outside), "../outside", "/etc/passwd", "a/../../x"])
    if key == "corpus":
        m["corpus"]["dir"] = value
    else:
        m[key] = value
    _write_manifest(d, m)
    return f"manifest {key}: {value}"


def m_graph_glob(rng: random.Random, d: Path, outside: Path) -> str:
    m = _manifest(d)
    m["graph"][rng.randrange(len(m["graph"]))]["files"] = [rng.choice(["../*.jsonl", "/etc/*", "graph/../../*",
                                                                       "**/../../*.jsonl", "nothing/*.jsonl"])]
    _write_manifest(d, m)
    return "graph glob out of the pack"


def m_tenant(rng: random.Random, d: Path, outside: Path) -> str:
    m = _manifest(d)
    t = rng.choice(["../../etc", "_global", "", "a" * 65, "with space", m["tenants"][0]])
    m["tenants"] = [t, *m["tenants"][1:]] if t != m["tenants"][0] else [*m["tenants"], t]
    _write_manifest(d, m)
    return f"tenant {t!r}"


def m_duplicate_goal(rng: random.Random, d: Path, outside: Path) -> str:
    src = rng.choice(_files(d / "goals", (".yaml",)))
    shutil.copy(src, d / "goals" / f"zz_{src.name}")
    return f"goal file {src.name} copied"


def m_link_value(rng: random.Random, d: Path, outside: Path) -> str:
    m = _manifest(d)
    links = (m.get("corpus") or {}).get("links") or []
    docs = [p for p in _files(d / "corpus", (".md",)) if not p.name.lower().startswith("readme")]
    if not links or not docs:
        return "no link to break"
    link, doc = rng.choice(links), rng.choice(docs)
    text = doc.read_text(encoding="utf-8")
    text = text.replace("---\n", f"---\n{link['field']}: Nonexistent_{rng.randrange(99)}\n", 1) \
        if f"\n{link['field']}:" not in text else \
        "\n".join(f"{link['field']}: Nonexistent" if ln.startswith(f"{link['field']}:") else ln
                  for ln in text.split("\n"))
    doc.write_text(text, encoding="utf-8")
    return f"{doc.name}: unknown {link['field']} value"


def m_domain(rng: random.Random, d: Path, outside: Path) -> str:
    m = _manifest(d)
    dom = m["domain"]
    what = rng.choice(["subject", "trace", "authoritative", "identifier", "unknown_key"])
    if what == "subject":
        dom["subject"]["label"] = "Nobody"
    elif what == "trace":
        dom["subject"]["trace_relationship"] = "NOPE"
    elif what == "authoritative" and dom.get("authoritative"):
        dom["authoritative"][0]["subject_property"] = "nope"
    elif what == "identifier" and dom.get("identifiers"):
        dom["identifiers"][0]["label"] = "Nope"
    else:
        dom["colour"] = "blue"
    _write_manifest(d, m)
    return f"domain {what}"


def m_session(rng: random.Random, d: Path, outside: Path) -> str:
    f = d / "sessions" / f"fuzz_{rng.randrange(999)}.json"
    f.parent.mkdir(exist_ok=True)
    f.write_text(rng.choice(['{"tenant_id": ', '[1, 2]', '{"tenant_id": "nobody", "customer_id": "X"}',
                             '{"tenant_id": "../x"}', '{"customer_id": "X"}', '"text"']), encoding="utf-8")
    return f"session {f.name}"


def m_scenario(rng: random.Random, d: Path, outside: Path) -> str:
    src = rng.choice(_files(d / "scenarios", (".yaml",)))
    text = src.read_text(encoding="utf-8")
    choice = rng.choice(["fact", "session", "goal", "mapping", "yaml", "as_of"])
    text = {"fact": text.replace("facts:", "fact:", 1),
            "session": text.replace("session_file: ", "session_file: ../sessions/nobody_", 1),
            "goal": text.replace("goal: ", "goal: Not", 1),
            "mapping": "- just\n- a list\n",
            "yaml": text + "\n  : [unclosed\n",
            "as_of": text.replace("as_of:", "as_of_typo:", 1)}[choice]
    src.write_text(text, encoding="utf-8")
    return f"scenario {src.name}: {choice}"


def m_classifier(rng: random.Random, d: Path, outside: Path) -> str:
    f = d / "classifier.yaml"
    if not f.is_file():
        return "no classifier"
    text = f.read_text(encoding="utf-8")
    edit = rng.choice(["top_k: lots", "top_k: -1", "threshold: 2", 'clause_separators: "([a-z"',
                       'clause_separators: "(\\\\w+\\\\s?)+$"', "calibration_file: missing.json", "lexical_weight: nan",
                       "max_clauses: 1000000"])
    key = edit.split(":")[0]
    lines = [ln for ln in text.split("\n") if not ln.startswith(key + ":")]
    f.write_text("\n".join([*lines, edit, ""]), encoding="utf-8")
    return f"classifier {edit}"


def m_calibration(rng: random.Random, d: Path, outside: Path) -> str:
    f = d / "classifier_calibration.json"
    if not f.is_file():
        return "no calibration"
    f.write_text(rng.choice(["{not json", "[]", '{"a": 1}', ""]), encoding="utf-8")
    return "calibration file broken"


def m_schema(rng: random.Random, d: Path, outside: Path) -> str:
    f = d / "schema.yaml"
    raw = yaml.safe_load(f.read_text(encoding="utf-8"))
    what = rng.choice(["labels5", "relsx", "base", "extends", "two_base", "list"])
    if what == "labels5":
        raw["labels"] = 5
    elif what == "relsx":
        raw["relationships"] = "x"
    elif what == "base":
        raw["labels"].append({"name": "Document", "subgraph": "semantic"})
    elif what == "two_base":
        raw["labels"] += [{"name": "Document", "subgraph": "semantic"}, {"name": "GoalType", "subgraph": "semantic"}]
    elif what == "extends":
        raw["labels"].append({"extends": "Nothing", "properties": []})
    else:
        raw = [raw]
    f.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return f"schema {what}"


def m_graph(rng: random.Random, d: Path, outside: Path) -> str:
    f = rng.choice(_files(d / "graph", (".jsonl",)))
    what = rng.choice(["utf8", "gz", "json", "label", "dup", "edge", "props"])
    lines = f.read_text(encoding="utf-8").splitlines()
    recs = [ln for ln in lines if ln.startswith("{")]
    if what == "utf8":
        with open(f, "ab") as fh:
            fh.write(b'{"node": "X_\xff", "label": "Plan"}\n')
    elif what == "gz":
        gz = f.with_name(f.name + ".gz")
        gz.write_bytes(gzip.compress(f.read_bytes())[: rng.randrange(10, 60)])
        m = _manifest(d)
        for g in m["graph"]:
            g["files"] = [x.replace(f.name, gz.name) for x in g["files"]]
        _write_manifest(d, m)
    elif what == "json":
        f.write_text("\n".join([*lines, "{broken"]) + "\n", encoding="utf-8")
    elif what == "label" and recs:
        r = json.loads(rng.choice([x for x in recs if '"node"' in x] or recs))
        r["label"], r["node"] = "Unknown", str(r.get("node", "N")) + "_u"
        f.write_text("\n".join([*lines, json.dumps(r)]) + "\n", encoding="utf-8")
    elif what == "dup" and recs:
        f.write_text("\n".join([*lines, rng.choice([x for x in recs if '"node"' in x] or recs)]) + "\n",
                     encoding="utf-8")
    elif what == "edge":
        f.write_text("\n".join([*lines, '{"edge": "BILLED", "from": "NOPE_1", "to": "NOPE_2"}']) + "\n",
                     encoding="utf-8")
    else:
        f.write_text("\n".join([*lines, '{"node": "Z_1", "label": "Plan", "properties": 5}']) + "\n",
                     encoding="utf-8")
    return f"graph {f.name}: {what}"


def m_corpus(rng: random.Random, d: Path, outside: Path) -> str:
    c = d / "corpus"
    what = rng.choice(["binary", "nofront", "field", "supersedes", "yaml", "readme"])
    if what == "binary":
        (c / "scan.md").write_bytes(b"%PDF-1.7\n\x00\xff\xfe" + bytes(rng.randrange(256) for _ in range(64)))
    elif what == "nofront":
        (c / "plain.md").write_text("# Just text\n\n## 1 Section\nWords.\n", encoding="utf-8")
    elif what == "readme":
        (c / "README.md").write_text("# Corpus\n\nNotes for editors.\n", encoding="utf-8")
    else:
        doc = rng.choice([p for p in _files(c, (".md",)) if not p.name.lower().startswith("readme")])
        text = doc.read_text(encoding="utf-8")
        text = {"field": text.replace("---\n", "---\ncolour: blue\n", 1),
                "supersedes": text.replace("---\n", "---\nsupersedes: v0\n", 1) if "supersedes:" not in text
                else text.replace("supersedes: ", "supersedes: x", 1),
                "yaml": text.replace("---\n", "---\n: [unclosed\n", 1)}[what]
        doc.write_text(text, encoding="utf-8")
    return f"corpus {what}"


def m_goal(rng: random.Random, d: Path, outside: Path) -> str:
    f = rng.choice(_files(d / "goals", (".yaml",)))
    raw = yaml.safe_load(f.read_text(encoding="utf-8"))
    what = rng.choice(["patterns5", "section", "rel", "yaml", "goal", "defaults"])
    if what == "yaml":
        f.write_text(f.read_text(encoding="utf-8") + "\n  - [unclosed\n", encoding="utf-8")
        return f"goal {f.name}: yaml"
    if what == "patterns5":
        raw["patterns"] = 5
    elif what == "section" and raw["goal"].get("sections"):
        raw["goal"]["sections"][0]["patterns"] = ["no_such_pattern"]
    elif what == "rel" and raw.get("patterns"):
        raw["patterns"][0]["edge_sequence"] = [{"type": "NOPE", "direction": "out"}]
    elif what == "defaults":
        raw["defaults"] = [1]
    else:
        raw["goal"] = "text"
    f.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return f"goal {f.name}: {what}"


def m_filters(rng: random.Random, d: Path, outside: Path) -> str:
    f = d / "filters.yaml"
    f.write_text(rng.choice(["- not a mapping\n", "mappings: 5\n", f.read_text(encoding="utf-8").replace(
        "field: ", "field: nope_", 1)]), encoding="utf-8")
    return "filters broken"


def m_oversize(rng: random.Random, d: Path, outside: Path) -> str:
    kind = rng.choice(["goals", "scenarios", "sessions", "corpus"])
    f = rng.choice(_files(d / kind))
    limit = {"goals": 4, "scenarios": 1, "sessions": 0.25, "corpus": 8}[kind]
    with open(f, "a", encoding="utf-8") as fh:
        fh.write("\n# " + "x" * int(limit * (1 << 20) + 1024) + "\n")
    return f"{f.relative_to(d)} over its size limit"


def m_flip(rng: random.Random, d: Path, outside: Path) -> str:
    f = rng.choice(_files(d))
    data = bytearray(f.read_bytes())
    if not data:
        return "empty file"
    for _ in range(rng.randrange(1, 4)):
        i = rng.randrange(len(data))
        data[i: i + rng.randrange(1, 6)] = bytes(rng.choice(b'{}[]:,"\n -#\xff\x00aZ9') for _ in range(rng.randrange(1, 4)))
    f.write_bytes(bytes(data))
    return f"bytes edited in {f.relative_to(d)}"


def m_drop_key(rng: random.Random, d: Path, outside: Path) -> str:
    f = rng.choice(_files(d, (".yaml",)))
    try:
        raw = yaml.safe_load(f.read_text(encoding="utf-8"))
    except yaml.YAMLError:
        return "unparsable yaml left alone"
    if not isinstance(raw, dict) or not raw:
        return "no key to drop"
    key = rng.choice(sorted(raw, key=str))
    del raw[key]
    f.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return f"{f.relative_to(d)}: key {key!r} removed"


def m_benign(rng: random.Random, d: Path, outside: Path) -> str:
    what = rng.choice(["comment", "doc", "session", "readme", "description", "inside_link"])
    if what == "comment":
        f = rng.choice(_files(d, (".yaml",)))
        f.write_text("# a comment added by the fuzzer\n" + f.read_text(encoding="utf-8"), encoding="utf-8")
    elif what == "doc":
        src = rng.choice([p for p in _files(d / "corpus", (".md",)) if not p.name.lower().startswith("readme")])
        text = src.read_text(encoding="utf-8")
        lines = text.split("\n")
        out = []
        for ln in lines:
            if ln.startswith("document_id:"):
                ln = ln + "-fuzzcopy"
            elif ln.startswith("document:"):
                ln = ln.replace(".pdf", "-fuzzcopy.pdf")
            elif ln.startswith("supersedes:"):
                continue
            out.append(ln)
        (src.parent / f"fuzzcopy-{src.name}").write_text("\n".join(out), encoding="utf-8")
    elif what == "session":
        src = rng.choice(_files(d / "sessions", (".json",)))
        shutil.copy(src, src.with_name("fuzz_copy.json"))
    elif what == "readme":
        (d / "NOTES.md").write_text("Editor notes.\n", encoding="utf-8")
    elif what == "description":
        m = _manifest(d)
        m["description"] = "fuzzed " + str(m.get("description", ""))
        _write_manifest(d, m)
    else:  # a symlink that stays inside the pack is fine
        os.symlink("../NOTES_TARGET.md", d / "corpus" / "README-link.md")
        (d / "NOTES_TARGET.md").write_text("notes\n", encoding="utf-8")
    return f"benign {what}"


MUTATIONS: list[tuple[Mutation, float]] = [
    (m_symlink_file, 2), (m_symlink_replace, 1), (m_symlink_dir, 1), (m_manifest_path, 1.5), (m_graph_glob, 0.5),
    (m_tenant, 1), (m_duplicate_goal, 0.5), (m_link_value, 1), (m_domain, 1), (m_session, 1), (m_scenario, 1),
    (m_classifier, 1), (m_calibration, 0.5), (m_schema, 1), (m_graph, 1.5), (m_corpus, 1.5), (m_goal, 1),
    (m_filters, 0.5), (m_oversize, 0.5), (m_flip, 3), (m_drop_key, 2), (m_benign, 4),
]


def _outside(tmp: Path) -> Path:
    out = tmp / "outside"
    out.mkdir()
    (out / "secret.md").write_text("---\ndocument_id: secret\nrevision: v1\ntitle: Secret\nversion: current\n"
                                   "status: active\n---\n\n## 1 Secret\nSECRET-OUTSIDE-THE-PACK\n", encoding="utf-8")
    (out / "secret.jsonl").write_text('{"node": "SECRET_1", "label": "Plan", "properties": {"name": "Secret"}}\n',
                                      encoding="utf-8")
    (out / "secret.yaml").write_text("goal: {name: Secret}\n", encoding="utf-8")
    return out


def _base(tmp: Path, which: str) -> Path:
    d = tmp / "pack"
    if which == "starter":
        init_pack(d, name="fuzz", tenant="fuzz-co")
    else:
        shutil.copytree(TELECOM, d, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    return d


def _read_as_load_does(d: Path) -> int:
    """Everything a load reads from the pack, without a store (telecom's accepted cases: a real
    load would embed its corpus): the pack, its graph items, metagraph items and documents.
    Returns the number of items read."""
    p = read_pack(d)
    n = sum(1 for _, items in graph_items(p) for _ in items)
    n += len(metagraph_items(p))
    batches, _ = document_items(p, resolver=lambda tenant: lambda label, match, value: f"{label}_{value}")
    return n + sum(len(items) for _, items in batches)


def _case(i: int, tmp: Path) -> dict[str, Any]:
    rng = random.Random(SEED * 100_003 + i)
    which = "telecom" if rng.random() < 0.1 else "starter"
    d = _base(tmp, which)
    outside = _outside(tmp)
    picks = rng.choices([m for m, _ in MUTATIONS], weights=[w for _, w in MUTATIONS], k=rng.choice([1, 1, 2, 3]))
    done = [m(rng, d, outside) for m in picks]
    store = tmp / "store"
    loaded: Any = None
    refused: list[Any] | None = None
    with _Reads() as reads:
        problems = validate_pack(d)
        if problems or which == "starter":
            try:
                loaded = load_pack(d, store)
            except PackInvalidError as exc:
                refused = exc.problems
        else:
            loaded = _read_as_load_does(d)
    escaped = _escaped(list(reads), outside)
    assert not escaped, f"case {i} ({which}: {done}) read outside the pack: {escaped[:5]}"
    if problems:
        assert refused is not None, f"case {i} ({which}: {done}): validate found {problems[:3]}, load loaded"
        assert [str(p) for p in refused] == [str(p) for p in problems], f"case {i}: load and validate differ"
        assert not store.exists() or not any(store.iterdir()), f"case {i}: a refused load wrote {store}"
        for p in problems:
            assert p.file and p.message, f"case {i}: a problem without its file or message: {p!r}"
    else:
        assert loaded is not None, f"case {i} ({which}: {done}): validate ok, load refused {refused}"
    return {"case": i, "base": which, "mutations": done, "problems": len(problems), "loaded": loaded is not None}


def test_validate_and_load_agree_on_fuzzed_packs(tmp_path: Path) -> None:
    """Every case: validate and load agree, nothing outside the pack is read, no raw error
    (an exception other than HopweaveError fails the test where it is raised)."""
    (tmp_path / "probe").mkdir()
    probe = _outside(tmp_path / "probe")
    with _Reads() as reads:
        (probe / "secret.md").read_text(encoding="utf-8")
    assert _escaped(list(reads), probe), "the audit hook does not see reads: the check below could not fail"
    results = []
    for i in range(CASES):
        case_dir = tmp_path / f"c{i}"
        case_dir.mkdir()
        try:
            results.append(_case(i, case_dir))
        except HopweaveError as exc:  # a typed error that escaped validate or a load validate accepted
            pytest.fail(f"case {i}: {type(exc).__name__}: {exc}")
        finally:
            shutil.rmtree(case_dir, ignore_errors=True)
    refused = sum(1 for r in results if r["problems"])
    loaded = sum(1 for r in results if r["loaded"])
    assert refused + loaded == CASES
    assert refused >= CASES // 3 and (CASES < 20 or loaded >= 1), results  # the mix exercises both paths
