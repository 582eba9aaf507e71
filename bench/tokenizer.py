"""The e5 tokenizer against Hugging Face `tokenizers`' Unigram model over the same vocabulary: ids, speed, memory.

    .venv/bin/python bench/tokenizer.py [--rounds 5]

`tokenizers` is not a dependency: install it beside (e.g. `pip install --no-deps --target DIR tokenizers`
and put DIR on PYTHONPATH). Both tokenize LoCoMo's English turns and MADial's Chinese dialogue lines
(../shared/eval) after the same normalization (the bundled character map, single spaces, '▁' for a space),
each word cut by Viterbi under the unigram scores. Prints whether every text gets the same ids, the
throughput of each (a cold pass: every word new; a warm pass: the word cache full, as in a worker), the
time to build each and the memory each adds to the process (RSS). Asserts nothing.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import statistics
import sys
import time
from pathlib import Path

from tideline_core.embedding.e5.tokenizer import METASPACE, Tokenizer
from tideline_core.embedding.e5.weights import E5Weights

LIBRARY_OWN_MIB: list[float] = []
EVAL = Path(__file__).resolve().parent.parent.parent / "shared" / "eval"


def rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 2**20


def texts() -> tuple[list[str], list[str]]:
    english = [
        turn["text"]
        for sample in json.loads((EVAL / "locomo" / "locomo_dev.json").read_text(encoding="utf-8"))
        for key, session in sample["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
    ]
    chinese = [
        line.split(":", 1)[-1].strip().strip('"')
        for row in (EVAL / "madial-zh" / "MADial-Bench-zh-dialogue.json").read_text(encoding="utf-8").splitlines()
        if row.strip()
        for line in json.loads(row)["dialogue"]
        if ":" in line
    ]
    return english, chinese


def library_tokenizer(ours: Tokenizer, weights: E5Weights):  # type: ignore[no-untyped-def]
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import pre_tokenizers
    from tokenizers.models import Unigram

    vocabulary = weights.vocabulary
    # Every piece in id order; a piece spelled twice keeps its first id, as ours does.
    spelled = {vocabulary.piece_ids[key_id]: key for key, key_id in vocabulary.pieces.iteritems()}
    vocab = [(spelled.get(i, f"<unused-{i}>"), float(vocabulary.scores[i])) for i in range(len(vocabulary.scores))]
    del spelled
    gc.collect()
    listed = rss_mib()  # the Python list the library is built from is not the library's: measured apart
    model = HFTokenizer(Unigram(vocab, unk_id=vocabulary.unk, byte_fallback=False))
    LIBRARY_OWN_MIB.append(rss_mib() - listed)
    model.pre_tokenizer = pre_tokenizers.Split(METASPACE, behavior="merged_with_next")

    def ids(text: str) -> list[int]:
        return model.encode(ours.normalized(text), add_special_tokens=False).ids

    return ids


def per_second(fn, corpus: list[str], rounds: int) -> float:  # type: ignore[no-untyped-def]
    runs = []
    for _ in range(rounds):
        started = time.perf_counter()
        for text in corpus:
            fn(text)
        runs.append(time.perf_counter() - started)
    return len(corpus) / statistics.median(runs)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    english, chinese = texts()
    weights = E5Weights()
    gc.collect()
    before = rss_mib()
    started = time.perf_counter()
    ours = Tokenizer(weights.vocabulary)
    ours_build = time.perf_counter() - started
    ours_mib = rss_mib() - before
    gc.collect()
    before = rss_mib()
    started = time.perf_counter()
    theirs = library_tokenizer(ours, weights)
    theirs_build = time.perf_counter() - started
    theirs_mib = rss_mib() - before
    version = __import__("tokenizers").__version__
    print(f"# e5 tokenizer vs tokenizers {version}: {len(english)} English, {len(chinese)} Chinese texts")
    for name, corpus in (("English", english), ("Chinese", chinese)):
        differ = [text for text in corpus if ours.ids(text) != theirs(text)]
        print(f"  {name}: {len(corpus) - len(differ)}/{len(corpus)} texts with the same ids")
        for text in differ[:3]:
            print(f"    differs: {text[:80]!r}")
    print(
        f"  build      ours {ours_build:6.3f} s  +{ours_mib:5.1f} MiB   library {theirs_build:6.3f} s"
        f"  +{theirs_mib:5.1f} MiB (of which the model itself +{LIBRARY_OWN_MIB[0]:.1f} MiB)"
    )
    for name, corpus in (("English", english), ("Chinese", chinese)):
        cold = Tokenizer(weights.vocabulary)
        started = time.perf_counter()
        for text in corpus:
            cold.ids(text)
        ours_cold = len(corpus) / (time.perf_counter() - started)
        ours_warm = per_second(cold.ids, corpus, args.rounds)
        library = per_second(theirs, corpus, args.rounds)
        print(f"  {name:<8} ours cold {ours_cold:9.0f}/s  warm {ours_warm:9.0f}/s   library {library:9.0f}/s")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
