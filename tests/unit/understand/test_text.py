"""understand/text.py: importing spaCy for the rule-based pipeline."""

from __future__ import annotations

import subprocess
import sys


def _fresh_python(code: str) -> str:
    """What ``code`` prints in a new interpreter (imports are per process)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          check=True).stdout.strip()


def test_spacy_is_imported_without_torch() -> None:
    """Cold start: thinc (under spaCy) would import torch (seconds); the rule-based pipeline
    never uses it, and another import of torch afterwards still works."""
    code = ("import sys; from hopweave.understand.text import import_spacy; sp = import_spacy(); "
            "nlp = sp.blank('en'); nlp.add_pipe('span_ruler'); nlp('a late fee'); "
            "from spacy.lang.en.stop_words import STOP_WORDS; assert STOP_WORDS; "
            "print('torch' in sys.modules)")
    assert _fresh_python(code) == "False"


def test_spacy_prefetched_in_a_thread_is_complete_for_every_caller() -> None:
    """Engine.open starts spaCy's import in a thread (it overlaps the stores' reads): a caller
    arriving mid-import waits for the whole module, never a half-initialised one, and the
    prefetch thread still keeps torch out."""
    code = ("import sys, threading; from hopweave.understand import text; text.prefetch_spacy(); "
            "got = []; ts = [threading.Thread(target=lambda: got.append(text.import_spacy())) for _ in range(4)]; "
            "[t.start() for t in ts]; [t.join(60) for t in ts]; "
            "assert len(got) == 4 and all(m is got[0] for m in got); "
            "nlp = got[0].blank('en'); nlp.add_pipe('span_ruler'); nlp('a late fee'); "
            "text.prefetch_spacy(); print('torch' in sys.modules)")
    assert _fresh_python(code) == "False"


def test_spacy_is_imported_without_its_command_line_and_spacy_info_still_works() -> None:
    """spaCy's command line (typer, weasel, requests...) is about 0.45 s of a cold start and the
    pipeline never uses it: it is left out of the import, and both ``spacy.info`` and a later
    ``import spacy.cli`` get spaCy's real one."""
    code = ("import sys; from hopweave.understand.text import import_spacy; sp = import_spacy(); "
            "assert not any(m.startswith('spacy.cli') or m in ('typer', 'weasel') for m in sys.modules), "
            "sorted(m for m in sys.modules if 'cli' in m); "
            "assert not hasattr(sp, 'cli'); "
            "nlp = sp.blank('en'); nlp.add_pipe('span_ruler'); assert [t.text for t in nlp('a late-fee')]; "
            "about = sp.info(silent=True); assert about['spacy_version'] == sp.__version__, about; "
            "import spacy.cli.info; assert sys.modules['spacy.cli.info'].info is not sp.info; "
            "from spacy.cli import setup_cli; print(callable(setup_cli))")
    assert _fresh_python(code) == "True"


def test_tokenizer_text_cuts_only_long_symbol_runs_and_keeps_the_length() -> None:
    from hopweave.understand.text import MAX_SYMBOL_RUN, tokenizer_text

    for normal in ("I want to dispute this $39 late fee!!! :-) ... ??", "a!" * 2000, "!" * MAX_SYMBOL_RUN, "😀" * 16):
        assert tokenizer_text(normal) == normal
    hostile = "fee " + "!?" * 40 + " ok " + "😀" * 500
    out = tokenizer_text(hostile)
    assert len(out) == len(hostile)
    assert out.split() == ["fee", ("!?" * 40)[:MAX_SYMBOL_RUN], "ok", "😀" * MAX_SYMBOL_RUN]
