"""Builds the e5 encoder as an ONNX graph with 8-bit weights, once per weights file, and caches it on disk."""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from tideline_core.embedding.e5.weights import LAYER_NORMS, E5Weights
from tideline_core.errors import ConfigurationError, MissingExtra
from tideline_core.numeric import np

log = logging.getLogger(__name__)

GRAPH_VERSION = 1  # bump when the graph changes: the cached file name carries it
OPSET = 17


def cached_encoder(weights: E5Weights, cache_dir: Path) -> Path:
    """The int8 encoder for `weights`, built into `cache_dir` on first use (a few seconds) and reused after."""
    path = cache_dir / f"e5-small-int8-g{GRAPH_VERSION}-{weights.fingerprint()}.onnx"
    if path.is_file():
        return path
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        scratch_dir = tempfile.TemporaryDirectory(dir=cache_dir)
    except OSError as exc:
        raise ConfigurationError(
            f"TIDELINE_MODEL_CACHE={cache_dir} cannot hold the local embedding model ({exc.strerror or exc}): "
            "point it at a writable directory"
        ) from exc
    log.info("building the local embedding model into %s (once)", path)
    with scratch_dir as scratch:
        full = Path(scratch) / "float.onnx"
        _save_float_graph(weights, full)
        quantized = Path(scratch) / "int8.onnx"
        _quantize(full, quantized)
        # Several processes may build at once (server, workers): each renames a complete file into place.
        os.replace(quantized, path)
    return path


class _QuietQuantizer(logging.Filter):
    """The quantizer logs per-tensor chatter and advice (a sympy pre-pass) on the root logger: none of it is news."""

    def filter(self, record: logging.LogRecord) -> bool:
        parts = Path(record.pathname).parts
        return not ("onnxruntime" in parts and "quantization" in parts)


def _quantize(source: Path, target: Path) -> None:
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic  # it reads the graph with onnx
    except ImportError:
        raise MissingExtra("onnx", "model", "building the local e5 model file") from None

    quiet = _QuietQuantizer()
    root = logging.getLogger()
    root.addFilter(quiet)
    try:
        # Weights per output channel in int8, activations quantized per call: the VNNI/dot-product path.
        quantize_dynamic(source, target, weight_type=QuantType.QInt8, per_channel=True)
    finally:
        root.removeFilter(quiet)


def _save_float_graph(weights: E5Weights, path: Path) -> None:
    try:
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        raise MissingExtra("onnx", "model", "building the local e5 model file") from None

    shape = weights.shape
    tensors = weights.encoder()
    nodes: list[onnx.NodeProto] = []
    initializers: list[onnx.TensorProto] = []

    def const(name: str, value: np.ndarray) -> str:
        initializers.append(numpy_helper.from_array(value, name))
        return name

    def op(kind: str, inputs: list[str], **attrs: Any) -> str:
        out = f"{kind.lower()}_{len(nodes)}"
        nodes.append(helper.make_node(kind, inputs, [out], **attrs))
        return out

    def scalar(name: str, value: float) -> str:
        return const(name, np.array(value, dtype=np.float32))

    def norm(x: str, prefix: str) -> str:
        return op(
            "LayerNormalization",
            [x, const(f"{prefix}.w", tensors[f"{prefix}.w"]), const(f"{prefix}.b", tensors[f"{prefix}.b"])],
            epsilon=shape.eps,
            axis=-1,
        )

    def linear(x: str, prefix: str) -> str:
        y = op("MatMul", [x, const(f"{prefix}.wT", np.ascontiguousarray(tensors[f"{prefix}.w"].T))])
        return op("Add", [y, const(f"{prefix}.b", tensors[f"{prefix}.b"])])

    head_dim = shape.hidden // shape.heads
    split = const("split_heads", np.array([0, 0, shape.heads, head_dim], dtype=np.int64))
    merge = const("merge_heads", np.array([0, 0, shape.hidden], dtype=np.int64))
    scale, sqrt2, one, half = (
        scalar("scale", 1 / np.sqrt(head_dim)),
        scalar("sqrt2", np.sqrt(2.0)),
        scalar("one", 1.0),
        scalar("half", 0.5),
    )
    x = norm("embeddings", "eln")
    for layer in range(shape.layers):
        p = f"l{layer}"
        q = op("Transpose", [op("Reshape", [linear(x, f"{p}.q"), split])], perm=[0, 2, 1, 3])
        k = op("Transpose", [op("Reshape", [linear(x, f"{p}.k"), split])], perm=[0, 2, 3, 1])
        v = op("Transpose", [op("Reshape", [linear(x, f"{p}.v"), split])], perm=[0, 2, 1, 3])
        scores = op("Add", [op("Mul", [op("MatMul", [q, k]), scale]), "attention_bias"])
        context = op("MatMul", [op("Softmax", [scores], axis=-1), v])
        context = op("Reshape", [op("Transpose", [context], perm=[0, 2, 1, 3]), merge])
        x = norm(op("Add", [x, linear(context, f"{p}.ao")]), f"{p}.{LAYER_NORMS[0]}")
        inner = linear(x, f"{p}.fi")
        gelu = op("Mul", [op("Mul", [inner, op("Add", [op("Erf", [op("Div", [inner, sqrt2])]), one])]), half])
        x = norm(op("Add", [x, linear(gelu, f"{p}.fo")]), f"{p}.{LAYER_NORMS[1]}")
    nodes.append(helper.make_node("Identity", [x], ["hidden"]))
    graph = helper.make_graph(
        nodes,
        "e5_encoder",
        [
            helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["rows", "length", shape.hidden]),
            helper.make_tensor_value_info("attention_bias", TensorProto.FLOAT, ["rows", 1, "length", "length"]),
        ],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["rows", "length", shape.hidden])],
        initializers,
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)]), str(path))
