"""The search CLI: ingest (JSON report, malformed input), search, profiles, eval on a tiny BEIR set."""

from __future__ import annotations

import json

from domains import write_deltabank_settings
from typer.testing import CliRunner

from hopweave.cli import app

runner = CliRunner()


def _corpus(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "waiver.md").write_text(
        "---\ndocument_id: waiver\nrevision: v3\ntier: Platinum\nregion: US\n---\n"
        "# Waiver policy\n\n## 3.2 Annual courtesy waiver\nPlatinum customers may receive one late fee waiver per year.\n"
    )
    (tmp_path / "docs" / "lounge.md").write_text(
        "---\ndocument_id: lounge\ntier: Gold\nregion: US\n---\n# Lounges\n\nGold card members get airport lounge access.\n"
    )
    return tmp_path / "docs"


def test_ingest_search_and_profiles(tmp_path, embedder):
    docs = _corpus(tmp_path)
    store = tmp_path / "store"
    write_deltabank_settings(store)  # a store with the pack's schema: its chunk fields (tier, region)
    r = runner.invoke(app, ["ingest", str(docs), "--store", str(store), "--tenant", "t1", "--json"])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    assert rep["documents"] == 2 and rep["new"] == 2 and rep["skipped"] == []
    r = runner.invoke(app, ["ingest", str(docs), "--store", str(store), "--tenant", "t1", "--json"])
    assert json.loads(r.stdout)["unchanged"] == 2
    r = runner.invoke(app, ["search", "late fee waiver", "--store", str(store), "--tenant", "t1", "--json",
                            "--filter", '{"op": "eq", "field": "tier", "value": "Platinum"}'])
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    assert [h["document_id"] for h in res["hits"]] == ["waiver"]
    assert res["profile"]["name"] and res["coverage"]["embedding_coverage"] == "full"
    r = runner.invoke(app, ["search", "x", "--store", str(store), "--tenant", "t1", "--profile", "nope"])
    assert r.exit_code == 2 and "UnknownProfileError" in r.output
    r = runner.invoke(app, ["profiles", "--json"])
    assert json.loads(r.stdout)["default"] in [p["name"] for p in json.loads(r.stdout)["profiles"]]


def test_ingest_malformed_exit_code(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"document_id": "a", "tenant_id": "t1", "text": "ok"}\n{oops\n')
    r = runner.invoke(app, ["ingest", str(bad), "--store", str(tmp_path / "s"), "--json"])
    assert r.exit_code == 2 and "bad.jsonl:2" in r.output
    assert not (tmp_path / "s").exists()


def test_eval_beir_and_ablation_on_a_tiny_set(tmp_path, embedder):
    data = tmp_path / "beir"
    (data / "qrels").mkdir(parents=True)
    docs = {
        "d1": ("Late fees", "A late fee of $39 is charged when a payment is missed."),
        "d2": ("Waivers", "Platinum customers can have one late fee waived per year."),
        "d3": ("Lounges", "Gold members get airport lounge access."),
        "d4": ("Fraud", "Report card fraud within 60 days to get a refund."),
    }
    (data / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, "title": t, "text": x}) + "\n" for k, (t, x) in docs.items()))
    (data / "queries.jsonl").write_text('{"_id": "1", "text": "waive a late fee"}\n{"_id": "2", "text": "stolen card refund"}\n')
    (data / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\td2\t1\n2\td4\t1\n")
    cache = tmp_path / "cache"
    r = runner.invoke(app, ["eval", "beir", "--data", str(data), "--split", "test", "--profile", "rrf_k60", "--json", "--cache", str(cache)])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["profile"]["name"] == "rrf_k60" and out["queries"] == 2
    assert all(0.0 <= v <= 1.0 for v in out["metrics"].values()) and out["metrics"]["recall@10"] == 1.0
    assert out["index"]["built"] is True
    r = runner.invoke(app, ["eval", "ablation", "--data", str(data), "--json", "--cache", str(cache)])
    assert r.exit_code == 0, r.output
    ab = json.loads(r.stdout)
    assert ab["index"]["built"] is False  # the frozen index is reused
    names = [row["name"] for row in ab["rows"]]
    assert "dense_only" in names and "lexical_only" in names and any("bi-encoder" in n for n in names)
    assert ab["baseline"] in ("dense_only", "lexical_only")
