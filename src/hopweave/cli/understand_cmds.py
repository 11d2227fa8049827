"""``hopweave understand`` (stage 1 for one utterance) and ``hopweave understand-calibrate``."""

from __future__ import annotations

import shlex
import sys
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from hopweave.cli import app
from hopweave.cli.common import GraphOpt, emit_json, handle_errors, open_cli_stores

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.understand.classifier import ClassifierConfig



def _open_store(store: Optional[str]) -> Any:
    """The stores of ``--graph`` (graph only, read-only when embedded); they must exist."""
    return open_cli_stores(store, graph_only=True, read_only=True)


def _qdrant_filter(tree: Any, schema: Any) -> Any:
    """The compiled qdrant-client Filter as JSON (the search module's one compiler)."""
    from hopweave.search.qdrant_filter import to_qdrant

    types = {f.name: f.type for f in schema.chunk_fields}
    compiled = to_qdrant(tree, types)
    return compiled.model_dump(mode="json", exclude_none=True) if compiled is not None else None


def _print_human(d: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console()
    goal = d["goal"] or f"(no confident goal; best {d['classification']['best']})"
    con.print(f"[bold]goal[/bold] {goal}  confidence {d['confidence']:.2f}")
    t = Table("type", "value", "source", "span", "text", title="entities")
    for e in d["entities"]:
        span = "" if e["span"] is None else f"{e['span'][0]}-{e['span'][1]}"
        extra = dict(e["properties"].items())
        value = f"{e['value']}" + (f" {extra}" if extra else "")
        t.add_row(e["type"], value, e["source"], span, e["text"] or "")
    con.print(t)
    for m in d["mentions"]:
        con.print(f"[yellow]mention[/yellow] {m['type']} {m['value']} at {m['span']}: {m['reason']}")
    con.print(f"[bold]filter[/bold] {d['filter_display']}")
    con.print(f"[bold]qdrant filter[/bold] {d.get('qdrant_filter')}")
    con.print(f"[bold]lexical[/bold] {d['lexical']['query']}" + ("  (fallback)" if d["lexical"]["fallback"] else ""))
    for n in d["notes"]:
        con.print(f"[dim]note: {n}[/dim]")


@app.command("understand")
@handle_errors
def understand_cmd(
    utterance: str = typer.Argument(..., help="What the customer said."),
    session: Path = typer.Option(..., "--session", help="Session JSON file (see a pack's sessions/ folder)."),
    as_of: Optional[str] = typer.Option(None, "--as-of", help="Request time, ISO date/datetime (default: today)."),
    store: Optional[str] = GraphOpt,
    threshold: Optional[float] = typer.Option(None, "--threshold", help="Abstain below this confidence."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Classify the goal, resolve entities, and print the filter and lexical plan for one utterance."""
    from hopweave.engine.boundary import check_session_attributes, check_utterance_input
    from hopweave.models.common import read_session_file
    from hopweave.understand import Understander

    sess = read_session_file(session)
    check_utterance_input(utterance)
    from hopweave.errors import ConfigError
    from hopweave.understand.classifier import classifier_settings

    stores = _open_store(store)
    try:
        stored, graph = stores.settings, stores.graph
        if stored is None:
            raise ConfigError(f"{stores.graph_uri.display} was not loaded from a domain pack: run "
                              f"`hopweave load PACK --graph {stores.graph_uri.display}`")
        settings = stored.registry().for_tenant(sess.tenant_id)
        check_session_attributes(sess, settings)
        rec = stored.domains[settings.name]
        config, calibration = classifier_settings(rec.classifier, rec.calibration)
        when = as_of if as_of is not None else date.today().isoformat()
        u = Understander(graph, threshold=threshold, settings=settings, classifier_config=config,
                         calibration=calibration).understand(utterance, sess, when)
        d = u.to_json_dict()
        d["qdrant_filter"] = _qdrant_filter(u.filter, graph.schema)
    finally:
        stores.close()
    if as_json:
        emit_json(d)
    else:
        _print_human(d)


def _calibration_inputs(pack: Path | None, validation: Path | None, out: Path | None
                        ) -> tuple[ClassifierConfig | None, str | None, Path, Path]:
    """The classifier settings, domain, validation split and output file of a calibration: from
    ``--pack`` (its classifier file, ``utterances/validation.yaml`` and ``calibration_file``)
    unless given; without a pack, ``--validation`` and ``--out`` are required and the engine's
    default settings are calibrated. Raises InputError naming what to pass."""
    from hopweave.errors import InputError
    from hopweave.pack.manifest import pack_path, read_manifest
    from hopweave.understand.classifier import load_classifier_config

    config: ClassifierConfig | None = None
    domain: str | None = None
    if pack is not None:
        m = read_manifest(pack)
        domain = m.name
        if m.classifier and pack_path(pack, m.classifier, "classifier").is_file():
            config = load_classifier_config(pack_path(pack, m.classifier, "classifier"))
        if validation is None and m.utterances:
            validation = pack_path(pack, f"{m.utterances.rstrip('/')}/validation.yaml", "utterances")
        if out is None and config is not None:
            out = config.calibration_path()
    if validation is None or out is None:
        missing = " and ".join(f"--{n}" for n, v in (("validation", validation), ("out", out)) if v is None)
        raise InputError(f"understand-calibrate needs {missing}: pass --pack PACK (the pack whose classifier "
                         "you calibrate; its classifier.yaml names the calibration_file) or the option itself")
    return config, domain, validation, out


@app.command("understand-calibrate")
@handle_errors
def calibrate_cmd(
    validation: Optional[Path] = typer.Option(
        None, "--validation", help="Labeled validation split (default: the pack's utterances/validation.yaml)."
    ),
    pack: Optional[Path] = typer.Option(
        None, "--pack", help="The pack whose classifier is calibrated (settings, validation split, output)."
    ),
    store: Optional[str] = GraphOpt,
    out: Optional[Path] = typer.Option(
        None, "--out", help="Where to write (default: the pack's calibration_file)."
    ),
    l2: float = typer.Option(0.05, "--l2", help="L2 penalty of the logistic fit."),
    as_json: bool = typer.Option(False, "--json", help="Print the calibration as JSON."),
) -> None:
    """Fit the goal classifier's calibration on held-out validation utterances (deterministic)."""
    from hopweave.understand.calibration import fit_calibration, write_calibration
    from hopweave.understand.classifier import GoalClassifier

    config, domain, vpath, target = _calibration_inputs(pack, validation, out)
    stores = _open_store(store)
    try:
        clf = GoalClassifier(stores.graph, config=config, domain=domain)
        # the store path is machine-specific; what matters of it (the goal examples) is hashed
        # into the provenance as examples_sha256
        args, skip = [], False
        for a in sys.argv[2:]:
            if skip or a in ("--store", "--graph") or a.startswith(("--store=", "--graph=")):
                skip = a in ("--store", "--graph")
                continue
            args.append(shlex.quote(a))
        cmd = " ".join(["hopweave understand-calibrate", "--store <store>", *args])
        cal = fit_calibration(clf, vpath, l2=l2, command=cmd)
        write_calibration(cal, target)
    finally:
        stores.close()
    if as_json:
        emit_json(cal.model_dump(mode="json"))
    else:
        m = cal.provenance["fit_metrics"]
        typer.echo(f"wrote {target}: coef {list(cal.coef)} intercept {cal.intercept} "
                   f"(n={cal.provenance['n']}, log-loss {m['log_loss']}, ECE {m['ece']})")


def _print_intents(pack: Path, split: str, r: dict[str, Any]) -> None:
    pct = lambda v: f"{100 * v:.1f}%"  # noqa: E731
    typer.echo(f"{pack.name}: {split} split, {r['n']} utterances ({r['n_in_scope']} in scope, "
               f"{r['n_out_of_scope']} out of scope), threshold {r['threshold']}")
    typer.echo(f"  in-scope accuracy {pct(r['in_scope_accuracy'])}  (abstained {pct(r['in_scope_abstained'])}, "
               f"right when it answers {pct(r['selective_accuracy'])})")
    typer.echo(f"  out of scope abstained {pct(r['oos_abstain_rate'])}  macro-F1 {r['macro_f1']:.3f}")
    cal = r["calibration"]
    typer.echo(f"  calibration: ECE {cal['ece']}  Brier {cal['brier']}  log-loss {cal['log_loss']}")
    labels = list(r["confusion"])
    typer.echo("\nper label: precision / recall / F1 (support)")
    for label, m in r["per_label"].items():
        typer.echo(f"  {label:28s} {m['precision']:.3f} / {m['recall']:.3f} / {m['f1']:.3f} ({int(m['support'])})")
    typer.echo("\nconfusion (label -> predicted: count)")
    for label in labels:
        row = ", ".join(f"{p}: {n}" for p, n in r["confusion"][label].items())
        typer.echo(f"  {label:28s} {row or '-'}")
    if r["errors"]:
        typer.echo(f"\nerrors ({len(r['errors'])})")
        for e in r["errors"]:
            typer.echo(f"  {e['label'] or '(no goal)'} -> {e['predicted'] or '(no goal)'} "
                       f"(best {e['best']} {e['confidence']:.2f}): {e['text']}")


def _register_eval_intents() -> None:
    """``hopweave eval intents PACK``: registered on the ``eval`` group (search_cmds)."""
    from hopweave.cli.search_cmds import eval_app

    @eval_app.command("intents")
    @handle_errors
    def eval_intents(
        pack: Path = typer.Argument(..., help="A pack folder (its goals, classifier.yaml and utterances/)."),
        split: str = typer.Option("validation", "--split", help="A file of the pack's utterances/ folder by "
                                  "name (validation, test, ...) or a path to a labelled YAML file."),
        threshold: Optional[float] = typer.Option(None, "--threshold", help="Abstain threshold to read the "
                                                  "predictions at (default: the classifier's)."),
        as_json: bool = typer.Option(False, "--json", help="Print the full report as JSON."),
    ) -> None:
        """The pack's goal classifier on its labelled utterances, in one process: in-scope
        accuracy, abstention, per-goal precision / recall / F1, the confusion between goals,
        calibration error and every mistake. Built from the pack's files (goal types,
        classifier.yaml, its calibration file) without loading a store."""
        from hopweave.errors import InputError
        from hopweave.pack.intent_eval import intent_report, pack_classifier
        from hopweave.pack.manifest import pack_path, read_manifest
        from hopweave.understand.datasets import load_split

        m = read_manifest(pack)
        path = Path(split)
        if not path.suffix:
            if not m.utterances:
                raise InputError(f"{pack}: the manifest names no utterances folder; pass --split FILE.yaml")
            path = pack_path(pack, f"{m.utterances.rstrip('/')}/{split}.yaml", "utterances")
        if not path.is_file():
            raise InputError(f"{path}: no such labelled split; name a file of the pack's utterances folder "
                             "(validation, test) or give a path")
        if threshold is not None and not 0.0 <= threshold <= 1.0:
            raise InputError(f"--threshold must be in [0, 1], got {threshold}")
        items = load_split(path)
        clf = pack_classifier(pack)
        thr = clf.threshold if threshold is None else threshold
        report = intent_report(items, clf.classify_many([i.text for i in items]), thr)
        report = {"pack": m.name, "split": str(split), **report}
        if as_json:
            emit_json(report)
        else:
            _print_intents(pack, split, report)


_register_eval_intents()
