"""understand/text.py: importing spaCy for the rule-based pipeline."""

from __future__ import annotations


def test_spacy_is_imported_without_torch() -> None:
    """Cold start: thinc (under spaCy) would import torch (seconds); the rule-based pipeline
    never uses it, and another import of torch afterwards still works."""
    import subprocess
    import sys

    code = ("import sys; from hopweave.understand.text import import_spacy; sp = import_spacy(); "
            "nlp = sp.blank('en'); nlp.add_pipe('span_ruler'); nlp('a late fee'); "
            "from spacy.lang.en.stop_words import STOP_WORDS; assert STOP_WORDS; "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "False"
