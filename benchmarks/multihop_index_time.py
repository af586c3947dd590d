"""Index time of the entity graph with ``--entities ner`` at 10^4 passages (issue 39's speed goal), and the speed of
each step: spaCy's reading (passages per second, wall and CPU), the dictionary and linking pass, and the whole
``build_index`` + ``EntityGraph.from_nodes`` with the default embedding model or with embedding left out (a
constant vector, so the rest of the pipeline is timed alone). LLM calls at indexing are counted (0).

Passages (all distinct): the MuSiQue and 2WikiMultihopQA corpora of the shared sets, then SQuAD's articles and
the Python documentation of ``glossary-pydocs`` cut at paragraph ends into passages of about MuSiQue's mean length
(470 characters), up to ``--passages``. Each passage is one document, so ``build_index`` keeps it as one chunk.

    .venv/bin/python benchmarks/multihop_index_time.py [--passages 10000] [--steps read,link,index]
        [--embed default,none] [--processes 1,2] [--batch-sizes 64]

The machine has 2 cores: run it under ``nice -n 19`` beside other work and read the CPU seconds beside the wall.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from kg_common import BENCH  # noqa: E402

PASSAGE_CHARS = 470


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _paragraph_passages(text: str, size: int = PASSAGE_CHARS) -> list[str]:
    """``text`` cut at blank lines (else line ends) into passages of about ``size`` characters."""
    out, current = [], ""
    for paragraph in (p.strip() for p in text.replace("\r", "").split("\n")):
        if not paragraph:
            continue
        current = f"{current} {paragraph}".strip()
        if len(current) >= size:
            out.append(current)
            current = ""
    if current:
        out.append(current)
    return out


def passages(n: int) -> list[str]:
    """``n`` distinct passages (see the module docstring)."""
    texts = [r["text"] for r in _jsonl(BENCH / "multihop-musique" / "corpus.jsonl")]
    texts += [r["text"] for r in _jsonl(BENCH / "multihop-2wiki" / "corpus.jsonl")]
    for name in ("longdocs-squad/docs.jsonl", "glossary-pydocs/corpus.jsonl"):
        for record in _jsonl(BENCH / name):
            texts += _paragraph_passages(record["text"])
    texts = list(dict.fromkeys(t for t in texts if t.strip()))
    if len(texts) < n:
        raise SystemExit(f"only {len(texts)} distinct passages in the shared sets, asked for {n}")
    return texts[:n]


class _Clock:
    def __enter__(self) -> _Clock:
        self.wall, self.cpu = time.perf_counter(), _cpu()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall, self.cpu = time.perf_counter() - self.wall, _cpu() - self.cpu


def _cpu() -> float:
    """CPU seconds of this process and its finished children (spaCy's reader processes)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def read_step(texts: list[str], processes: int, batch_size: int, **settings: Any) -> None:
    from llama_index_kgplus.entity_graph import SpacyEntityExtractor

    extractor = SpacyEntityExtractor(batch_size=batch_size, n_process=processes, **settings)
    extractor.warm_up()
    with _Clock() as clock:
        found = extractor.extract(texts)
    names = sum(len(f) for f in found)
    print(
        f"| read (spaCy), {processes} process(es), batch {batch_size} {settings or ''} | {len(texts)} | "
        f"{clock.wall:.1f} | {clock.cpu:.1f} | {len(texts) / clock.wall:.0f} | {len(texts) / clock.cpu:.0f} | "
        f"{names} names |",
        flush=True,
    )


def _documents(texts: list[str]) -> list[Any]:
    from llama_index.core import Document

    return [Document(id_=f"p{i:05d}", text=t, metadata={"doc_id": f"p{i:05d}"}) for i, t in enumerate(texts)]


def link_step(texts: list[str], processes: int) -> None:
    """The linker alone on ready-made nodes: reading, dictionary, matching."""
    from llama_index.core.schema import TextNode

    from llama_index_kgplus.entity_graph import EntityLinker
    from llama_index_kgplus.entity_graph._names import is_linkable_name

    nodes = [TextNode(id_=f"p{i:05d}", text=t) for i, t in enumerate(texts)]
    linker = EntityLinker.from_defaults(["ner"], ner_processes=processes)
    linker._ner_extractor().warm_up()  # noqa: SLF001 - the model load is not part of the rate
    is_linkable_name("warm")  # so is the stop-word list's
    # the steps of EntityLinker.__call__, timed one by one
    with _Clock() as total:
        readings = linker._start(nodes)  # noqa: SLF001
        with _Clock() as read:
            linker._read_ner(nodes, readings, False)  # noqa: SLF001
        with _Clock() as rest:
            linker._finish(nodes, readings, False)  # noqa: SLF001
    for label, clock, output in [
        ("read (spaCy)", read, ""),
        ("dictionary + matching every passage against it", rest, f"{linker.n_entities_} entities"),
        ("EntityLinker ner, the whole call", total, f"{linker.llm_calls_} LLM calls"),
    ]:
        print(
            f"| {label}, {processes} process(es) | {len(texts)} | {clock.wall:.1f} | {clock.cpu:.1f} | "
            f"{len(texts) / clock.wall:.0f} | {len(texts) / clock.cpu:.0f} | {output} |",
            flush=True,
        )


def index_step(texts: list[str], processes: int, embed: str) -> None:
    from llama_index.core.embeddings.mock_embed_model import MockEmbedding

    from llama_index_kgplus import build_index
    from llama_index_kgplus.entity_graph import EntityGraph, EntityLinker
    from llama_index_kgplus.llm import embed_model_from_spec

    embed_model = embed_model_from_spec() if embed == "default" else MockEmbedding(embed_dim=384)
    docs = _documents(texts)
    with _Clock() as clock:  # the spaCy model's load is inside, as in `kgplus ingest`
        linker = EntityLinker.from_defaults(["ner"], ner_processes=processes)
        index = build_index(docs, None, embed_model=embed_model, extra_transformations=[linker], show_progress=False)
        graph = EntityGraph.from_nodes(index.docstore.docs.values(), linker.dictionary_, index_id=index.index_id)
    label = "default model (MiniLM-L6 int8 ONNX)" if embed == "default" else "left out (constant vector)"
    print(
        f"| build_index + EntityGraph, ner, {processes} process(es), embedding {label} | {graph.n_passages} | "
        f"{clock.wall:.1f} | {clock.cpu:.1f} | {graph.n_passages / clock.wall:.0f} | "
        f"{graph.n_passages / clock.cpu:.0f} | {graph.n_entities} entities, {linker.llm_calls_} LLM calls |",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passages", type=int, default=10_000)
    parser.add_argument("--steps", default="read,link,index", help="of read, link, index")
    parser.add_argument("--embed", default="none,default", help="index step: none and/or default")
    parser.add_argument("--processes", default="1,2", help="spaCy processes to try (ner_processes)")
    parser.add_argument("--batch-sizes", default="64", help="read step: nlp.pipe batch sizes to try")
    args = parser.parse_args()
    texts = passages(args.passages)
    mean = sum(map(len, texts)) / len(texts)
    print(f"{len(texts)} passages, {mean:.0f} characters on average; load average {os.getloadavg()[0]:.1f}\n")
    print("| step | passages | wall s | CPU s | passages/s (wall) | passages per CPU-s | output |")
    print("|---|---|---|---|---|---|---|")
    processes = [int(p) for p in args.processes.split(",")]
    steps = args.steps.split(",")
    if "read" in steps:
        for p in processes:
            for batch_size in (int(b) for b in args.batch_sizes.split(",")):
                read_step(texts, p, batch_size)
    if "link" in steps:
        for p in processes:
            link_step(texts, p)
    if "index" in steps:
        for embed in args.embed.split(","):
            for p in processes:
                index_step(texts, p, embed)
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
