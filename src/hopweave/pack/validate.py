"""``hopweave validate PACK``: a dry run that reports every problem of a pack at once.

Each check is a small function returning :class:`~hopweave.pack.problems.Problem` records (file,
line or record, what is wrong, how to fix it); nothing is written. Every file is read through
one :class:`~hopweave.pack.files.PackFiles` (inside the pack, within the size limits, UTF-8). The
checks run in load order, and a check whose inputs are broken is skipped with the reason (a
schema that does not parse cannot check the graph files), so one mistake gives one problem, not
a cascade; otherwise every check runs, whatever an earlier one found. ``hopweave load`` runs
:func:`validate_pack` first and refuses the pack on any problem.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pydantic import ValidationError

from hopweave.errors import HopweaveError, PackError, PatternValidationError
from hopweave.models.keys import error_message
from hopweave.models.schema import GraphSchema
from hopweave.pack.files import PackFileError, PackFiles
from hopweave.pack.manifest import MANIFEST, SHARED, PackManifest, expand_globs, manifest_problems
from hopweave.pack.problems import Problem

#: The manifest keys that name a folder or file of the pack.
_PATH_KEYS = ("schema", "goals", "filters", "classifier", "sessions", "scenarios", "utterances")


def _err(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _fix_of(exc: BaseException, default: str) -> str:
    return str(getattr(exc, "fix", "") or default)


def _file_problem(exc: PackFileError, record: str | None = None) -> Problem:
    return Problem(file=exc.file, record=record, message=exc.problem, fix=exc.fix)


@dataclass
class VocabularyIndex:
    """The values of the properties corpus links match, per (visible tenant, label, property):
    what a document's link field may name. ``SHARED`` holds the shared vocabulary."""

    wanted: set[tuple[str, str]]
    values: dict[tuple[str, str, str], set[str]] = field(default_factory=dict)

    def add(self, tenant: str, label: str, props: dict[str, Any]) -> None:
        for lab, prop in self.wanted:
            if lab == label and props.get(prop) is not None:
                v = props[prop]
                self.values.setdefault((tenant, lab, prop), set()).update(
                    str(x) for x in (v if isinstance(v, (list, tuple)) else [v]))

    def has(self, tenant: str, label: str, prop: str, value: str) -> bool:
        return any(value in self.values.get((t, label, prop), ()) for t in (tenant, SHARED))


def check_manifest(d: Path, files: PackFiles | None = None) -> tuple[PackManifest | None, list[Problem]]:
    """The manifest parsed and checked, and its problems (every path it names stays inside the pack)."""
    pf = files or PackFiles(d)
    if not (d / MANIFEST).is_file():
        return None, [Problem(file=MANIFEST, message=f"{d} has no {MANIFEST}: it is not a domain pack",
                              fix="create it (`hopweave init DIR` writes a starter pack; docs/packs.md)")]
    try:
        raw = pf.read_yaml(MANIFEST, "manifest", "pack manifest")
        if not isinstance(raw, dict):
            return None, [Problem(file=MANIFEST, message="the manifest must be a mapping",
                                  fix="write name, tenants, schema, goals, domain, ... (docs/packs.md)")]
        m = PackManifest.model_validate(raw)
    except ValidationError as exc:
        return None, [Problem(file=MANIFEST, record=".".join(map(str, e["loc"])), message=error_message(e, PackManifest),
                              fix="see the manifest reference in docs/packs.md") for e in exc.errors()]
    except PackFileError as exc:
        return None, [_file_problem(exc)]
    probs = [Problem(file=MANIFEST, message=msg, fix="see the manifest reference in docs/packs.md")
             for msg in manifest_problems(m)]
    rels = {k: getattr(m, "schema_" if k == "schema" else k) for k in _PATH_KEYS}
    if m.corpus is not None:
        rels["corpus.dir"] = m.corpus.dir
    for key, rel in rels.items():
        if not rel:
            continue
        try:
            pf.path(rel, key)
        except PackFileError as exc:
            probs.append(Problem(file=MANIFEST, record=key, message=exc.problem, fix=exc.fix))
    if not (d / m.goals).exists():
        probs.append(Problem(file=MANIFEST, record="goals", message=f"goals path {m.goals!r} does not exist",
                             fix=f"create {m.goals} or point `goals:` at the right path"))
    return m, probs


def _safe_path(pf: PackFiles, rel: str, what: str) -> Path | None:
    try:
        return pf.path(rel, what)
    except PackFileError:
        return None  # reported by check_manifest


def check_schema(d: Path, m: PackManifest, files: PackFiles | None = None
                 ) -> tuple[GraphSchema | None, dict[str, Any], list[Problem]]:
    """The merged schema (base + the pack's), the pack's raw schema and every schema problem."""
    from hopweave.pack.readers import store_schema

    pf = files or PackFiles(d)
    f = m.schema_
    fix = ("a pack schema extends the base schema: add labels, relationships, chunk fields or "
           "`extends: <BaseLabel>` properties; never repeat a base label")
    path = _safe_path(pf, f, "schema")
    if path is None:
        return None, {}, []
    try:
        raw = pf.read_yaml(path, "schema", "pack schema")
        return store_schema(raw), raw, []
    except PackFileError as exc:
        return None, {}, [_file_problem(exc)]
    except HopweaveError as exc:
        msgs = getattr(exc, "problems", None) or [_err(exc)]
        return None, {}, [Problem(file=f, message=msg, fix=fix) for msg in msgs]


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


@dataclass
class GoalFiles:
    """The goal files as read: (relative file, GoalType, raw patterns) per readable file, and
    the problems of the unreadable ones."""

    parsed: list[tuple[str, Any, list[dict[str, Any]]]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def names(self) -> set[str]:
        return {g.name for _, g, _ in self.parsed}


def read_goal_files(d: Path, m: PackManifest, files: PackFiles | None = None) -> GoalFiles:
    """Every ``*.yaml`` of the pack's goals folder, parsed (by file name); never raises."""
    from hopweave.graph.metagraph_io import parse_goal_doc

    pf = files or PackFiles(d)
    out = GoalFiles()
    gdir = _safe_path(pf, m.goals, "goals")
    if gdir is None or not gdir.is_dir():
        return out
    paths = pf.listing(gdir, (".yaml", ".yml"), "goals folder")
    if not paths:
        out.problems.append(Problem(file=m.goals, message="no goal files (*.yaml)", fix="add at least one goal file"))
    for f in paths:
        rel = pf.rel(f)
        try:
            goal, raws = parse_goal_doc(pf.read_yaml(f, "goal"), rel)
        except PackFileError as exc:
            out.problems.append(_file_problem(exc))
            continue
        except HopweaveError as exc:
            out.problems.append(Problem(file=rel, message=_err(exc), fix=_fix_of(exc, "fix the goal mapping")))
            continue
        out.parsed.append((rel, goal, raws))
    return out


def check_goals(d: Path, m: PackManifest, schema: GraphSchema, files: PackFiles | None = None,
                goal_files: GoalFiles | None = None) -> list[Problem]:
    """Every gate problem of every goal file: each pattern against the schema, the sections'
    pattern names, goal and pattern names unique across files, then the whole metagraph write
    ``load`` makes (conflicts between patterns)."""
    from hopweave.graph.gates import check_conflicts, pattern_errors
    from hopweave.graph.metagraph_io import gated_items
    from hopweave.models.metagraph import TraversalPattern

    gf = goal_files or read_goal_files(d, m, files)
    out: list[Problem] = list(gf.problems)
    first_goal: dict[str, str] = {}
    first_pattern: dict[str, str] = {}
    clean = not gf.problems
    for rel, goal, raws in gf.parsed:
        if goal.name in first_goal:
            out.append(Problem(file=rel, record=f"goal {goal.name}", message=f"goal {goal.name!r} is also defined "
                               f"in {first_goal[goal.name]}", fix="define each goal in one file (rename one)"))
            clean = False
        first_goal.setdefault(goal.name, rel)
        parsed: list[TraversalPattern] = []
        for raw in raws:
            name = str(raw.get("name", "?"))
            if name in first_pattern:
                out.append(Problem(file=rel, record=f"pattern {name}", message=f"pattern {name!r} is also defined "
                                   f"in {first_pattern[name]}", fix="pattern names are unique in a pack: rename one"))
                clean = False
            first_pattern.setdefault(name, rel)
            errs = pattern_errors(raw, schema, goal)
            for perr in errs:
                out.append(Problem(file=rel, record=f"pattern {name}", message=_err(perr),
                                   fix=_fix_of(perr, "fix the pattern")))
            if errs:
                clean = False
            else:
                parsed.append(TraversalPattern.model_validate(raw))
        if goal.outcomes is not None:
            facts = goal.case.facts if goal.case is not None else {}
            for key, msg, fix in goal.outcomes.problems(facts, schema, _subject_label(m)):
                out.append(Problem(file=rel, record=f"goal {goal.name}: {key}", message=msg, fix=fix))
        mine = {str(r.get("name")) for r in raws if r.get("goal", goal.name) == goal.name}
        if goal.case is not None:
            named = [(f"case.facts.{k}", f.pattern) for k, f in goal.case.facts.items() if f.pattern]
            for where, pname in [*named, *(("case.rules", r) for r in goal.case.rules)]:
                if pname not in mine:
                    out.append(Problem(file=rel, record=f"goal {goal.name}: {where}", message=f"names pattern "
                                       f"{pname!r}, which goal {goal.name} does not have",
                                       fix="name a pattern of this goal's file (a missing one reads as unknown at "
                                           "query time)"))
                    clean = False
        for s in goal.sections:
            for pname in s.patterns:
                if pname not in mine:
                    out.append(Problem(file=rel, record=f"goal {goal.name}", message=f"section {s.name!r} names "
                                       f"pattern {pname!r}, which goal {goal.name} does not have",
                                       fix="name a pattern of this goal's file"))
                    clean = False
        if len(parsed) == len(raws):
            try:
                check_conflicts(parsed, ())
            except PatternValidationError as exc:
                out.append(Problem(file=rel, record=f"goal {goal.name}", message=_err(exc),
                                   fix=_fix_of(exc, "fix the goal's sections or patterns")))
                clean = False
    if clean and gf.parsed:  # the write load makes, over every goal file at once
        try:
            gated_items(schema, [g for _, g, _ in gf.parsed], [r for _, _, rs in gf.parsed for r in rs],
                        stored=(), domain=m.name)
        except HopweaveError as exc:
            out.append(Problem(file=m.goals, message=_err(exc), fix=_fix_of(exc, "fix the goals or patterns")))
    return out


def _subject_label(m: PackManifest) -> str | None:
    try:
        return m.domain_settings().subject.label
    except ValidationError:
        return None  # reported by check_manifest


def check_filters(d: Path, m: PackManifest, schema: GraphSchema, files: PackFiles | None = None) -> list[Problem]:
    """The filter mapping parses and names labels and chunk fields of the schema."""
    if not m.filters:
        return []
    from hopweave.understand.filter_map import filter_mapping_node, parse_mapping

    pf = files or PackFiles(d)
    path = _safe_path(pf, m.filters, "filters")
    if path is None:
        return []
    try:
        mapping = parse_mapping(pf.read_yaml(path, "filters", "filter mapping"), m.filters)
        mapping.check(schema)
        filter_mapping_node(schema, mapping, domain=m.name)
    except PackFileError as exc:
        return [_file_problem(exc)]
    except HopweaveError as exc:
        return [Problem(file=m.filters, message=_err(exc),
                        fix="entity types must be schema labels and fields chunk fields of the schema")]
    return []


def check_classifier(d: Path, m: PackManifest, files: PackFiles | None = None) -> list[Problem]:
    """The classifier settings validate as the engine reads them (types, ranges, a regex that
    compiles) and their calibration file parses."""
    from hopweave.pack.readers import classifier_files, has_classifier_file
    from hopweave.understand.classifier import ClassifierConfig, classifier_settings

    pf = files or PackFiles(d)
    if not m.classifier or _safe_path(pf, m.classifier, "classifier") is None or not has_classifier_file(d, m):
        return []
    fix = "see the classifier settings in docs/packs.md"
    try:
        cfg, cal = classifier_files(d, m.classifier, pf)
        try:
            ClassifierConfig.model_validate(cfg)
        except ValidationError as exc:
            return [Problem(file=m.classifier, record=".".join(map(str, e["loc"])),
                            message=error_message(e, ClassifierConfig), fix=fix)
                    for e in exc.errors()]
        settings, _ = classifier_settings(cfg, cal)
        if settings is not None:
            settings.separators()
    except PackFileError as exc:
        return [_file_problem(exc)]
    except HopweaveError as exc:
        return [Problem(file=m.classifier, message=_err(exc).replace("the store's classifier settings",
                                                                    "the classifier settings"), fix=fix)]
    return []


def check_graph(d: Path, m: PackManifest, schema: GraphSchema, files: PackFiles | None = None,
                vocabulary: VocabularyIndex | None = None) -> list[Problem]:
    """Every problem of the graph files, entry by entry (ids shared across entries); the
    vocabulary values corpus links match are collected into ``vocabulary``."""
    from hopweave.graph.base import Node
    from hopweave.pack.graph_files import GraphContext, iter_graph_files

    pf = files or PackFiles(d)
    out: list[Problem] = []
    ctx = GraphContext()
    for i, entry in enumerate(m.graph):
        try:
            paths = expand_globs(d, entry.files, f"graph[{i}] ({entry.tenant})")
        except PackError as exc:
            out.append(Problem(file=MANIFEST, record=f"graph[{i}]", message=_err(exc),
                               fix=_fix_of(exc, "fix the file glob or add the file")))
            continue
        for item in iter_graph_files(paths, schema, out, tenant=entry.tenant, shared=entry.tenant == SHARED,
                                     root=d, context=ctx, pack_files=pf):
            if vocabulary is not None and isinstance(item, Node):
                vocabulary.add(entry.tenant, item.label, item.props)
    return out


def check_corpus(d: Path, m: PackManifest, schema: GraphSchema, files: PackFiles | None = None,
                 vocabulary: VocabularyIndex | None = None) -> list[Problem]:
    """Every problem of the corpus: its links name schema fields, labels and relationships,
    its files read and parse, and every linked value names a vocabulary node of the pack."""
    if m.corpus is None:
        return []
    from hopweave.pack.corpus import check_corpus_dir

    pf = files or PackFiles(d)
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
    cdir = _safe_path(pf, m.corpus.dir, "corpus")
    if cdir is None:
        return out
    docs: list[Any] = []
    found = check_corpus_dir(cdir, schema, root=d, tenant_id=m.tenant_for_corpus(), tenants=m.tenants,
                             files=pf, docs_out=docs)
    out += found
    if out or vocabulary is None:
        return out
    for doc in docs:
        for link in m.corpus.links:
            v = doc.metadata.get(link.field)
            for value in ([str(x) for x in v] if isinstance(v, (list, tuple)) else [] if v is None else [str(v)]):
                if not vocabulary.has(doc.tenant_id, link.label, link.match, value):
                    out.append(Problem(file=m.corpus.dir, record=f"{doc.document_id} ({doc.revision})",
                                       message=f"{link.field} {value!r} matches no {link.label} node with "
                                               f"{link.match} = {value!r} in the graph files",
                                       fix=f"add the {link.label} node to the graph files (the shared vocabulary "
                                           "or the document's tenant) or fix the front matter"))
    return out


def check_examples(d: Path, m: PackManifest, goals: set[str] | None, files: PackFiles | None = None,
                   goals_complete: bool = True) -> list[Problem]:
    """Sessions and scenarios parse with the models replay uses, name the pack's tenants and
    goals (``goals`` None: not checked; ``goals_complete`` False: a goal file is unreadable, which
    the fix mentions); a scenario's session file exists inside the pack."""
    from hopweave.models.common import parse_session
    from hopweave.models.domain import check_session_attributes
    from hopweave.models.scenario import UNSET, parse_scenario

    pf = files or PackFiles(d)
    out: list[Problem] = []
    tenants_fix = f"use one of {list(m.tenants)}"

    def session_problems(data: Any, rel: str, record: str | None = None) -> list[Problem]:
        try:
            s = parse_session(data, rel)
        except HopweaveError as exc:
            return [Problem(file=rel, record=record, message=_err(exc), fix="see Sessions in docs/packs.md")]
        if s.tenant_id not in m.tenants:
            return [Problem(file=rel, record=record, message=f"tenant_id {s.tenant_id!r} is not a tenant of the pack",
                            fix=tenants_fix)]
        try:
            settings = m.domain_settings()
        except (HopweaveError, ValueError):  # a malformed domain: section is reported by its own check
            return []
        try:  # declared names and types; a list only for a `many` attribute (never read as "no value")
            check_session_attributes(s, settings)
        except HopweaveError as exc:
            return [Problem(file=rel, record=record, message=_err(exc),
                            fix="see session_attributes in docs/packs.md")]
        return []

    sdir = _safe_path(pf, m.sessions, "sessions") if m.sessions else None
    for f in pf.listing(sdir, (".json",), "sessions folder") if sdir is not None else []:
        try:
            out += session_problems(pf.read_json(f, "session"), pf.rel(f))
        except PackFileError as exc:
            out.append(_file_problem(exc))
    cdir = _safe_path(pf, m.scenarios, "scenarios") if m.scenarios else None
    for f in pf.listing(cdir, (".yaml", ".yml"), "scenarios folder") if cdir is not None else []:
        rel = pf.rel(f)
        try:
            sc = parse_scenario(pf.read_yaml(f, "scenario"), rel)
        except PackFileError as exc:
            out.append(_file_problem(exc))
            continue
        except HopweaveError as exc:
            out.append(Problem(file=rel, message=_err(exc) + _pydantic_detail(exc),
                               fix="see the scenario format in docs/packs.md"))
            continue
        session: dict[str, Any] = {}
        if sc.session_file:
            try:
                session.update(pf.read_json(f.parent / sc.session_file, "session", "scenario's session file"))
            except PackFileError as exc:
                out.append(Problem(file=rel, record="session_file", message=exc.problem, fix=exc.fix))
                session = {}
            except TypeError:
                out.append(Problem(file=rel, record="session_file", message="the session file is not a JSON object",
                                   fix="write the Session fields as one JSON object"))
                session = {}
        if sc.session_file is None and sc.session is None:
            out.append(Problem(file=rel, record="session", message="the scenario names no session",
                               fix="add `session_file: ../sessions/NAME.json` or an inline `session:`"))
        elif session or sc.session:
            out += session_problems({**session, **(sc.session or {})}, rel, "session")
        e = sc.expect
        for where, goal in [("expect.goal", e.goal), *[("expect.intents", g) for g in e.intents]]:
            if goals is not None and goal is not UNSET and goal is not None and goal not in goals:
                out.append(Problem(file=rel, record=where, message=f"goal {goal!r} is not a goal of the pack",
                                   fix=f"use one of {sorted(goals or ())} or null" + (
                                       "" if goals_complete else ", or fix the unreadable goal file above")))
    return out


def _pydantic_detail(exc: BaseException) -> str:
    cause = exc.__cause__
    if isinstance(cause, ValidationError):
        return ": " + "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in cause.errors()[:5])
    return ""


def check_utterances(d: Path, m: PackManifest, files: PackFiles | None = None) -> list[Problem]:
    """The labelled utterance files parse: ``examples.yaml`` maps goal names to lists of
    utterances, the other files are lists of ``{text, goal, tags}``."""
    from hopweave.understand.datasets import LabeledUtterance

    pf = files or PackFiles(d)
    udir = _safe_path(pf, m.utterances, "utterances") if m.utterances else None
    out: list[Problem] = []
    for f in pf.listing(udir, (".yaml", ".yml"), "utterances folder") if udir is not None else []:
        rel = pf.rel(f)
        try:
            data = pf.read_yaml(f, "utterances", "utterance file")
        except PackFileError as exc:
            out.append(_file_problem(exc))
            continue
        if f.stem == "examples":
            ok = isinstance(data, dict) and all(isinstance(k, str) and isinstance(v, list)
                                                and all(isinstance(t, str) for t in v) for k, v in data.items())
            if not ok:
                out.append(Problem(file=rel, message="must map goal names to lists of utterances",
                                   fix="write `GoalName: [utterance, ...]`"))
            continue
        try:
            if not isinstance(data, list):
                raise ValueError("not a list")
            for item in data:
                LabeledUtterance.model_validate(item)
        except (ValueError, TypeError) as exc:
            out.append(Problem(file=rel, message=f"must be a list of {{text, goal, tags}} items ({_err(exc)})",
                               fix="see utterances in docs/packs.md"))
    return out


def validate_pack(pack_dir: str | Path) -> list[Problem]:
    """Every problem of the pack at ``pack_dir`` (an empty list: it loads). Never raises for the
    pack's content; raises PackError only when ``pack_dir`` is not a directory."""
    d = Path(pack_dir).resolve()
    if not d.is_dir():
        raise PackError(f"{pack_dir} is not a directory: pass a pack folder (one with a {MANIFEST})")
    pf = PackFiles(d)
    m, problems = check_manifest(d, pf)
    if m is None:
        return problems
    schema, _, sp = check_schema(d, m, pf)
    problems += sp
    goal_files = read_goal_files(d, m, pf)
    goal_names = goal_files.names
    if schema is None:
        later: list[Callable[[], list[Problem]]] = [
            lambda: check_classifier(d, m, pf),
            lambda: check_examples(d, m, goal_names, pf, not goal_files.problems),
            lambda: check_utterances(d, m, pf),
        ]
        for check in later:
            problems += check()
        return problems + [Problem(file=m.schema_, message="the checks of goals, filters, graph and corpus were "
                                   "skipped: the schema does not load", fix="fix the schema problems above first")]
    vocabulary = VocabularyIndex({(link.label, link.match) for link in (m.corpus.links if m.corpus else ())})
    checks: list[Callable[[], list[Problem]]] = [
        lambda: check_domain(m, schema),
        lambda: check_goals(d, m, schema, pf, goal_files),
        lambda: check_filters(d, m, schema, pf),
        lambda: check_classifier(d, m, pf),
        lambda: check_graph(d, m, schema, pf, vocabulary),
        lambda: check_corpus(d, m, schema, pf, vocabulary),
        lambda: check_examples(d, m, goal_names, pf, not goal_files.problems),
        lambda: check_utterances(d, m, pf),
    ]
    for check in checks:
        problems += check()
    return problems
