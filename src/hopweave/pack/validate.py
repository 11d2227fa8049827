"""``hopweave validate PACK``: a dry run that reports every problem of a pack at once.

Each check is a small function returning :class:`~hopweave.pack.problems.Problem` records (file,
line or record, what is wrong, how to fix it); nothing is written. The checks run in load
order, and a check whose inputs are broken is skipped with the reason (a schema that does not
parse cannot check the graph files), so one mistake gives one problem, not a cascade.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from pydantic import ValidationError

from hopweave.errors import HopweaveError, PackError, PatternValidationError
from hopweave.models.schema import GraphSchema
from hopweave.pack.manifest import MANIFEST, SHARED, PackManifest, expand_globs, manifest_problems, pack_path
from hopweave.pack.problems import Problem


def _rel(d: Path, p: Path | str) -> str:
    try:
        return str(Path(p).resolve().relative_to(d))
    except ValueError:
        return str(p)


def _err(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def check_manifest(d: Path) -> tuple[PackManifest | None, list[Problem]]:
    from hopweave.fileio import read_yaml
    from hopweave.pack.manifest import PackManifest as M

    if not (d / MANIFEST).is_file():
        return None, [Problem(file=MANIFEST, message=f"{d} has no {MANIFEST}: it is not a domain pack",
                              fix="create it (`hopweave init DIR` writes a starter pack; docs/packs.md)")]
    try:
        raw = read_yaml(d / MANIFEST, "pack manifest")
        m = M.model_validate(raw)
    except ValidationError as exc:
        return None, [Problem(file=MANIFEST, record=".".join(map(str, e["loc"])), message=e["msg"],
                              fix="see the manifest reference in docs/packs.md") for e in exc.errors()]
    except HopweaveError as exc:
        return None, [Problem(file=MANIFEST, message=_err(exc), fix="fix the YAML syntax")]
    probs = [Problem(file=MANIFEST, message=msg, fix="see the manifest reference in docs/packs.md")
             for msg in manifest_problems(m)]
    for attr in ("goals", "filters", "classifier", "sessions", "scenarios", "utterances"):
        rel = getattr(m, attr)
        if rel and not (d / rel).exists() and attr in ("goals",):
            probs.append(Problem(file=MANIFEST, record=attr, message=f"{attr} path {rel!r} does not exist",
                                 fix=f"create {rel} or point `{attr}:` at the right path"))
    return m, probs


def check_schema(d: Path, m: PackManifest) -> tuple[GraphSchema | None, dict[str, Any], list[Problem]]:
    from hopweave.fileio import read_yaml
    from hopweave.pack.loader import store_schema

    f = m.schema_
    try:
        raw = read_yaml(pack_path(d, f, "schema"), "pack schema")
        return store_schema(raw), raw, []
    except HopweaveError as exc:
        return None, {}, [Problem(file=f, message=_err(exc),
                                  fix="a pack schema extends the base schema: add labels, relationships, chunk "
                                      "fields or `extends: <BaseLabel>` properties; never repeat a base label")]


def check_domain(m: PackManifest, schema: GraphSchema) -> list[Problem]:
    """The domain settings name labels, relationships and properties of the schema."""
    out: list[Problem] = []
    try:
        s = m.domain_settings()
    except ValidationError:
        return []  # reported by check_manifest

    def need_label(name: str, where: str) -> None:
        if name not in schema.label_map:
            out.append(Problem(file=MANIFEST, record=where, message=f"label {name!r} is not in the schema",
                               fix=f"declare {name} in the pack's schema.yaml or fix the name"))

    def need_rel(name: str, where: str) -> None:
        if name not in schema.rel_map:
            out.append(Problem(file=MANIFEST, record=where, message=f"relationship {name!r} is not in the schema",
                               fix=f"declare {name} in the pack's schema.yaml (relationships:) or fix the name"))

    need_label(s.subject.label, "domain.subject.label")
    need_rel(s.subject.trace_relationship, "domain.subject.trace_relationship")
    for i, idf in enumerate(s.identifiers):
        need_label(idf.label, f"domain.identifiers[{i}].label")
        for step in idf.owner_path or ():
            need_rel(step.type, f"domain.identifiers[{i}].owner_path")
    for i, a in enumerate(s.authoritative):
        need_label(a.entity, f"domain.authoritative[{i}].entity")
        for step in a.via:
            need_rel(step.type, f"domain.authoritative[{i}].via")
        holder = a.via_label or s.subject.label
        if a.via_label:
            need_label(a.via_label, f"domain.authoritative[{i}].via_label")
        if a.subject_property and holder in schema.label_map \
                and a.subject_property not in schema.label_map[holder].props:
            out.append(Problem(file=MANIFEST, record=f"domain.authoritative[{i}].subject_property",
                               message=f"{holder} has no property {a.subject_property!r}",
                               fix=f"declare it on {holder} in schema.yaml or fix the name"))
    if s.synonyms:
        need_label(s.synonyms.label, "domain.synonyms.label")
        need_rel(s.synonyms.relationship, "domain.synonyms.relationship")
    for i, lab in enumerate(s.amounts_attach_to):
        need_label(lab, f"domain.amounts_attach_to[{i}]")
    return out


def check_goals(d: Path, m: PackManifest, schema: GraphSchema) -> list[Problem]:
    """Every gate problem of every goal file: each pattern against the schema, then the goal as a
    whole (its sections name patterns of the goal; no two patterns answer the same sub-question)."""
    from hopweave.graph.gates import check_conflicts, pattern_errors, validate_goal
    from hopweave.graph.metagraph_io import read_goal_file
    from hopweave.models.metagraph import TraversalPattern

    out: list[Problem] = []
    gdir = d / m.goals
    files = sorted(gdir.glob("*.yaml")) if gdir.is_dir() else []
    if gdir.is_dir() and not files:
        out.append(Problem(file=m.goals, message="no goal files (*.yaml)", fix="add at least one goal file"))
    for f in files:
        try:
            goal, raws = read_goal_file(f)
        except HopweaveError as exc:
            out.append(Problem(file=_rel(d, f), message=_err(exc), fix=_fix_of(exc, "fix the goal mapping")))
            continue
        parsed: list[TraversalPattern] = []
        for raw in raws:
            errs = pattern_errors(raw, schema, goal)
            for perr in errs:
                out.append(Problem(file=_rel(d, f), record=f"pattern {raw.get('name', '?')}", message=_err(perr),
                                   fix=_fix_of(perr, "fix the pattern")))
            if not errs:
                parsed.append(TraversalPattern.model_validate(raw))
        if goal.outcomes is not None:
            facts = goal.case.facts if goal.case is not None else {}
            subject = _subject_label(m)
            for field, msg, fix in goal.outcomes.problems(facts, schema, subject):
                out.append(Problem(file=_rel(d, f), record=f"goal {goal.name}: {field}", message=msg, fix=fix))
        if len(parsed) < len(raws):
            continue  # the goal-level checks need every pattern
        try:
            check_conflicts(parsed, ())
            validate_goal(goal, parsed)
        except PatternValidationError as exc:
            out.append(Problem(file=_rel(d, f), record=f"goal {goal.name}", message=_err(exc),
                               fix=_fix_of(exc, "fix the goal's sections or patterns")))
    return out


def _subject_label(m: PackManifest) -> str | None:
    try:
        return m.domain_settings().subject.label
    except ValidationError:
        return None  # reported by check_manifest


def _fix_of(exc: BaseException, default: str) -> str:
    return str(getattr(exc, "fix", "") or default)


def check_filters(d: Path, m: PackManifest, schema: GraphSchema) -> list[Problem]:
    if not m.filters:
        return []
    from hopweave.understand.filter_map import read_mapping_file

    try:
        read_mapping_file(pack_path(d, m.filters, "filters")).check(schema)
    except HopweaveError as exc:
        return [Problem(file=m.filters, message=_err(exc),
                        fix="entity types must be schema labels and fields chunk fields of the schema")]
    return []


def check_classifier(d: Path, m: PackManifest) -> list[Problem]:
    from hopweave.pack.loader import _classifier_files, _has_classifier_file

    if not m.classifier or not _has_classifier_file(d, m):
        return []

    try:
        _classifier_files(d, m.classifier)
    except HopweaveError as exc:
        return [Problem(file=m.classifier, message=_err(exc), fix="see the classifier settings in docs/packs.md")]
    return []


def check_graph(d: Path, m: PackManifest, schema: GraphSchema) -> list[Problem]:
    from hopweave.pack.graph_files import GraphContext, check_graph_files

    out: list[Problem] = []
    ctx = GraphContext()
    for i, entry in enumerate(m.graph):
        try:
            files = expand_globs(d, entry.files, f"graph[{i}] ({entry.tenant})")
        except PackError as exc:
            out.append(Problem(file=MANIFEST, record=f"graph[{i}]", message=_err(exc),
                               fix="fix the file glob or add the file"))
            continue
        out += check_graph_files(files, schema, tenant=entry.tenant, shared=entry.tenant == SHARED, root=d,
                                 context=ctx)
    return out


def check_corpus(d: Path, m: PackManifest, schema: GraphSchema) -> list[Problem]:
    if m.corpus is None:
        return []
    out: list[Problem] = []
    for i, link in enumerate(m.corpus.links):
        if link.field not in schema.chunk_field_map:
            out.append(Problem(file=MANIFEST, record=f"corpus.links[{i}]",
                               message=f"field {link.field!r} is not a chunk field of the schema",
                               fix="declare it under chunk_fields in schema.yaml"))
        if link.label not in schema.label_map:
            out.append(Problem(file=MANIFEST, record=f"corpus.links[{i}]", message=f"label {link.label!r} is not in the schema",
                               fix="declare the label in schema.yaml or fix the name"))
        if link.relationship not in schema.rel_map:
            out.append(Problem(file=MANIFEST, record=f"corpus.links[{i}]",
                               message=f"relationship {link.relationship!r} is not in the schema",
                               fix=f"declare {link.relationship} (Document -> {link.label}) in schema.yaml"))
    from hopweave.pack.corpus import check_corpus_dir

    out += check_corpus_dir(pack_path(d, m.corpus.dir, "corpus"), schema, root=d,
                            tenant_id=m.tenant_for_corpus(), tenants=m.tenants)
    return out


def check_examples(d: Path, m: PackManifest, goals: set[str]) -> list[Problem]:
    """Sessions and scenarios parse, name the pack's tenants and goals."""
    from hopweave.fileio import read_yaml

    out: list[Problem] = []
    for f in sorted((d / m.sessions).glob("*.json")) if m.sessions and (d / m.sessions).is_dir() else []:
        try:
            s = json.loads(f.read_text(encoding="utf-8"))
        except ValueError as exc:
            out.append(Problem(file=_rel(d, f), message=f"not valid JSON: {exc}", fix="fix the JSON"))
            continue
        if isinstance(s, dict) and s.get("tenant_id") not in m.tenants:
            out.append(Problem(file=_rel(d, f), message=f"tenant_id {s.get('tenant_id')!r} is not a tenant of the pack",
                               fix=f"use one of {list(m.tenants)}"))
    for f in sorted((d / m.scenarios).glob("*.yaml")) if m.scenarios and (d / m.scenarios).is_dir() else []:
        try:
            sc = read_yaml(f, "scenario")
        except HopweaveError as exc:
            out.append(Problem(file=_rel(d, f), message=_err(exc), fix="fix the YAML"))
            continue
        if not isinstance(sc, dict) or "utterance" not in sc:
            out.append(Problem(file=_rel(d, f), message="a scenario needs utterance, session, as_of and expect",
                               fix="see the scenario format in docs/packs.md"))
            continue
        goal = (sc.get("expect") or {}).get("goal")
        if goal is not None and goal not in goals:
            out.append(Problem(file=_rel(d, f), record="expect.goal", message=f"goal {goal!r} is not a goal of the pack",
                               fix=f"use one of {sorted(goals)} or null"))
        tenant = (sc.get("session") or {}).get("tenant_id") if isinstance(sc.get("session"), dict) else None
        if tenant is not None and tenant not in m.tenants:
            out.append(Problem(file=_rel(d, f), record="session.tenant_id",
                               message=f"tenant {tenant!r} is not a tenant of the pack", fix=f"use one of {list(m.tenants)}"))
    return out


def validate_pack(pack_dir: str | Path) -> list[Problem]:
    """Every problem of the pack at ``pack_dir`` (an empty list: it loads). Never raises for the
    pack's content; raises PackError only when ``pack_dir`` is not a directory."""
    d = Path(pack_dir).resolve()
    if not d.is_dir():
        raise PackError(f"{pack_dir} is not a directory: pass a pack folder (one with a {MANIFEST})")
    m, problems = check_manifest(d)
    if m is None:
        return problems
    schema, _, sp = check_schema(d, m)
    problems += sp
    if schema is None:
        return problems + [Problem(file=m.schema_, message="later checks skipped: the schema does not load",
                                   fix="fix the schema problems above first")]
    checks: list[Callable[[], list[Problem]]] = [
        lambda: check_domain(m, schema),
        lambda: check_goals(d, m, schema),
        lambda: check_filters(d, m, schema),
        lambda: check_classifier(d, m),
        lambda: check_graph(d, m, schema),
        lambda: check_corpus(d, m, schema),
        lambda: check_examples(d, m, _goal_names(d, m)),
    ]
    for check in checks:
        problems += check()
    return problems


def _goal_names(d: Path, m: PackManifest) -> set[str]:
    from hopweave.graph.metagraph_io import read_goal_file

    names = set()
    for f in sorted((d / m.goals).glob("*.yaml")) if (d / m.goals).is_dir() else []:
        try:
            names.add(read_goal_file(f)[0].name)
        except HopweaveError:
            continue
    return names
