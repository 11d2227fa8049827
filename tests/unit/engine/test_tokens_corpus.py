"""The offline token counter and the DeltaBank policy corpus (files, chunks, Document nodes)."""

from __future__ import annotations

from pathlib import Path

import pytest
from domains import deltabank_schema
from engine_store import EXAMPLE

from hopweave.engine import tokens
from hopweave.errors import ConfigError
from hopweave.pack.corpus import document_graph, load_corpus, store_resolver
from hopweave.pack.manifest import read_manifest
from hopweave.search.chunker import chunk_document

QUOTE = ("Platinum customers in good standing may receive one fee waiver per calendar year at the discretion "
         "of the support agent, up to $50, without escalation")


def test_token_counts_are_real_wordpiece_and_additive() -> None:
    c = tokens.default_counter()
    assert "wordpiece" in c.name
    assert tokens.count_tokens("") == 0
    assert tokens.count_tokens("CUST_4421") > 1  # subword pieces, not words
    lines = ["[Customer]", "Maria Lopez, CUST_4421, Platinum tier since 2023-08-12", "22/24 months on-time"]
    assert tokens.count_tokens("\n".join(lines)) == sum(tokens.count_tokens(x) for x in lines)
    assert tokens.count_tokens("word " * 1000) == 1000  # no truncation at the model's 128 tokens


def test_count_joined_equals_counting_the_whole_text() -> None:
    """A context block is counted from its cached lines: the same count as tokenizing it."""
    c = tokens.default_counter()
    assert c.additive
    lines = ["[Note]", "Goal unclear (best guess LateFeeDispute, confidence 0.11): ask — again…", "",
             "[Customer]", "Maria Lopez, CUST_4421, Platinum tier since 2023-08-12  (src: CUST_4421)",
             '"A late fee of $39 applies."  (src: CH_waiver-policy-v4_s2 rev-4 v4)', "  tabs\tand  spaces  ",
             "naïve café 東京 x" * 3, "w" * 300]
    for sep in ("\n", "\n\n", " "):
        text = sep.join(lines)
        assert tokens.count_joined(c, text, lines) == c.count(text)


def test_count_joined_counts_the_text_for_a_counter_that_is_not_additive() -> None:
    class Chars:
        name = "chars"

        def count(self, text: str) -> int:
            return len(text)

    assert tokens.count_joined(Chars(), "ab\ncd", ["ab", "cd"]) == 5  # the newline counts here


def test_only_whitespace_splitting_wordpiece_is_additive() -> None:
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel()
    assert not tokens._is_additive(bpe)  # byte-level BPE makes tokens of newlines
    wp = Tokenizer(models.WordPiece({"[UNK]": 0, "a": 1}, unk_token="[UNK]"))
    wp.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    assert tokens._is_additive(wp)
    wp.add_tokens([AddedToken("new line\n")])
    assert not tokens._is_additive(wp)  # an added token spanning whitespace
    plain = Tokenizer(models.WordPiece({"[UNK]": 0, "a": 1}, unk_token="[UNK]"))
    assert not tokens._is_additive(plain)  # no pre-tokenizer: nothing says whitespace splits


def test_missing_tokenizer_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOPWEAVE_TOKENIZER", str(tmp_path / "nope.json"))
    with pytest.raises(ConfigError, match="HOPWEAVE_TOKENIZER"):
        tokens._default_tokenizer_path()


@pytest.fixture(scope="module")
def corpus():
    return load_corpus(EXAMPLE / "corpus", deltabank_schema(), "deltabank")


def test_corpus_has_the_seed_passage_and_its_traps(corpus) -> None:
    by = {(d.document_id, d.revision): d for d in corpus}
    v3 = by[("waiver-policy", "v3")]
    # v3 is in force 2026-01-01 .. 2026-09-01; v4 (loaded, scheduled) supersedes it then
    assert v3.metadata["document"] == "waiver-policy-v3.pdf" and v3.version == "superseded"
    assert (v3.metadata["valid_from"], v3.metadata["valid_until"]) == ("2026-01-01", "2026-09-01")
    assert by[("waiver-policy", "v4")].metadata["valid_from"] == "2026-09-01"
    sec = next(c for c in chunk_document(v3) if c.section == "3.2")
    assert sec.text.startswith(QUOTE)
    assert by[("waiver-policy", "v2")].version == "superseded"
    gold = next(c for c in chunk_document(by[("gold-waiver-policy", "v3")]) if c.section == "3.2")
    assert gold.text.startswith("Gold customers in good standing may receive one fee waiver per calendar year")
    assert {d.metadata.get("region") for d in corpus} == {"US", "EU", "CA"}
    assert {d.metadata.get("policy_type") for d in corpus} == {
        "LateFeeWaiver", "FeeSchedule", "FraudClaim", "CreditLimit", "NameChange"}


def test_document_nodes_use_the_graph_vocabulary(corpus, engine) -> None:
    links = read_manifest(EXAMPLE).corpus.links  # type: ignore[union-attr]
    nodes, edges = document_graph(corpus, links, resolve=store_resolver(engine.graph, "deltabank"))
    ids = {n.id for n in nodes}
    assert len(nodes) == len(corpus) and "DOC_waiver-policy_v3" in ids
    e = {(x.src, x.type, x.dst) for x in edges}
    assert ("DOC_waiver-policy_v3", "SUPERSEDES", "DOC_waiver-policy_v2") in e
    assert ("DOC_waiver-policy_v3", "APPLIES_TO", "TIER_Platinum") in e
    assert ("DOC_waiver-policy_v3", "OF_PRODUCT", "PRODUCT_Platinum_Card") in e
    assert ("DOC_waiver-policy_v3", "OF_POLICY_TYPE", "POLICYTYPE_LateFeeWaiver") in e


def test_the_store_holds_both_sides(engine) -> None:
    node = engine.graph.get_node("deltabank", "DOC_waiver-policy_v2")
    assert node is not None and node.props["version"] == "superseded"
    assert engine.graph.get_node("northbank", "DOC_waiver-policy_v3") is None  # tenant data
    assert engine.index.count("deltabank", {"op": "eq", "field": "document_id", "value": "waiver-policy"},
                              current_only=False) == 7 + 7 + 7 + 5  # v4, v3, v2, v1: history stays
