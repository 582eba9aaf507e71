"""Runs the e5 encoder on ONNX Runtime: texts packed into rows, long texts in windows, mean-pooled and normalized."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tideline_core.embedding.base import normalize
from tideline_core.embedding.e5.graph import cached_encoder
from tideline_core.embedding.e5.tokenizer import Tokenizer
from tideline_core.embedding.e5.weights import E5Weights
from tideline_core.numeric import np

ROW_TOKENS = 256  # segments are packed into rows this long: attention across a row is paid for, so keep it short
ROWS_PER_RUN = 16
MASKED = -10000.0


@dataclass(frozen=True)
class Segment:
    """One model input (<s> + up to 510 content tokens + </s>) cut from text `text`, weighted by its content length."""

    text: int
    ids: tuple[int, ...]
    weight: int


@dataclass(frozen=True)
class Row:
    """Segments side by side in one input row; each attends only to itself."""

    segments: tuple[int, ...]  # indexes into the segment list
    length: int


def windows(text_index: int, content: Sequence[int], bos: int, eos: int, max_positions: int) -> list[Segment]:
    """A text's content tokens cut into model-sized windows (one, for all but very long texts)."""
    size = max_positions - 2
    if not content:
        return [Segment(text_index, (bos, eos), 1)]
    return [
        Segment(text_index, (bos, *content[at : at + size], eos), len(content[at : at + size]))
        for at in range(0, len(content), size)
    ]


def pack(lengths: Sequence[int], capacity: int = ROW_TOKENS) -> list[Row]:
    """First-fit decreasing: segments into rows of at most `capacity` tokens (a longer segment gets its own row)."""
    rows: list[list[int]] = []
    used: list[int] = []
    for index in sorted(range(len(lengths)), key=lambda i: (-lengths[i], i)):
        for r, total in enumerate(used):
            if total + lengths[index] <= capacity:
                rows[r].append(index)
                used[r] += lengths[index]
                break
        else:
            rows.append([index])
            used.append(lengths[index])
    return [Row(tuple(members), total) for members, total in zip(rows, used, strict=True)]


def pool(per_segment: np.ndarray, segments: Sequence[Segment], n_texts: int) -> np.ndarray:
    """Each text's vector: its windows' means weighted by their content length, then L2-normalized."""
    out = np.zeros((n_texts, per_segment.shape[1]), dtype=np.float64)
    weight = np.zeros(n_texts, dtype=np.float64)
    for vector, segment in zip(per_segment, segments, strict=True):
        out[segment.text] += segment.weight * vector
        weight[segment.text] += segment.weight
    out /= np.maximum(weight, 1)[:, None]
    return normalize(out)


class E5Engine:
    """multilingual-e5-small with the bundled weights, int8 on ONNX Runtime's CPU kernels."""

    def __init__(self, cache_dir: Path, weights: E5Weights | None = None, threads: int = 0) -> None:
        import onnxruntime

        self.weights = weights or E5Weights()
        self.tokenizer = Tokenizer(self.weights.vocabulary)
        shape = self.weights.shape
        self.dim = shape.hidden
        self._positions = self.weights.tensor("emb.pos").reshape(shape.max_positions, shape.hidden)
        self._token_type = self.weights.tensor("emb.type")[: shape.hidden]
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        # ONNX Runtime's arena keeps the largest batch's buffers for the life of the process: a worker
        # grew by 700 MiB over a few long batches, measured. Without it memory follows the batch in
        # hand; passages embed as fast, a one-line query costs about 0.5 ms more.
        options.enable_cpu_mem_arena = False
        # Idle pool threads would spin for a while after every run: a query 0.5 ms faster, for four
        # times the CPU (measured), taken from the server's other work and from every other process.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        self._session = onnxruntime.InferenceSession(
            str(cached_encoder(self.weights, cache_dir)), options, providers=["CPUExecutionProvider"]
        )

    def _content(self, text: str, query: bool) -> list[int]:
        """Token ids of `text` behind e5's role prefix, without the <s>/</s> markers."""
        return self.tokenizer.ids(("query: " if query else "passage: ") + text)

    def token_count(self, text: str, *, query: bool) -> int:
        return len(self._content(text, query)) + 2

    def embed(self, texts: Sequence[str], *, query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vocabulary, shape = self.weights.vocabulary, self.weights.shape
        segments = [
            s
            for i, text in enumerate(texts)
            for s in windows(i, self._content(text, query), vocabulary.bos, vocabulary.eos, shape.max_positions)
        ]
        rows = pack([len(s.ids) for s in segments])
        per_segment = np.zeros((len(segments), self.dim), dtype=np.float32)
        for start in range(0, len(rows), ROWS_PER_RUN):
            self._run(rows[start : start + ROWS_PER_RUN], segments, per_segment)
        return pool(per_segment, segments, len(texts))

    def _run(self, rows: Sequence[Row], segments: Sequence[Segment], per_segment: np.ndarray) -> None:
        length = max(row.length for row in rows)
        embeddings = np.zeros((len(rows), length, self.dim), dtype=np.float32)
        bias = np.full((len(rows), 1, length, length), MASKED, dtype=np.float32)
        spans: list[tuple[int, int, int, int]] = []
        for r, row in enumerate(rows):
            at = 0
            for index in row.segments:
                ids = np.asarray(segments[index].ids)
                end = at + len(ids)
                embeddings[r, at:end] = self.weights.word_rows(ids) + self._positions[: len(ids)] + self._token_type
                bias[r, 0, at:end, at:end] = 0.0
                spans.append((index, r, at, end))
                at = end
        hidden = self._session.run(["hidden"], {"embeddings": embeddings, "attention_bias": bias})[0]
        for index, r, at, end in spans:
            per_segment[index] = hidden[r, at:end].mean(axis=0)
