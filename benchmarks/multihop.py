"""Multi-hop retrieval over the shared multi-hop sets: Recall@2, Recall@5 and all-evidence@5 (and all-evidence@8,
the metric of the 2Wiki benchmark) of the entity graph beside a dense baseline run in the same process, with the
index time and the LLM calls made at indexing (0: no source here calls an LLM), and the published figures.

Sets (``--sets``): ``2wiki`` (51 2WikiMultihopQA questions, 780 passages, with titles), ``2wiki-notitles`` (the
same with opaque ids and no ``title`` field), ``musique-notitles`` (50 MuSiQue questions, 1,890 passages, no
titles) and ``musique`` (the same with titles). Recall@k = share of a question's supporting passages in the top
k, averaged over questions (HippoRAG's metric); all-evidence@k = share of questions with every supporting
passage in the top k.

Each set is indexed once per entity-source set; then every retrieval variant (``--variants``, a JSON list of
``[name, settings]``; settings are :class:`GraphRetrievalSettings` keywords) is evaluated on that same index and
graph. ``--cache DIR`` keeps the passage embeddings and the spaCy readings on disk (keyed by model and text), so
re-runs are cheap; the index time printed is then marked ``(cached)`` and is not the cold time.

    .venv/bin/python benchmarks/multihop.py [--sets 2wiki,2wiki-notitles,musique-notitles] [--cache DIR]
        [--variants '[["one sentence", {"sentence_seeds": 1}]]'] [--tables main,squad]

A variant with ``llm_steps`` (the optional query-time LLM step) uses the packaged local LLM (``llm_from_spec()``,
48 new tokens); its LLM calls are at query time (one per step and question), and its query ms include them. The
graph rows embed the dense hits' sentences (``sentence_seeds``) with the model itself, never the cache, so their
query ms include that; the question's own vector comes from the cache in every row.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from kg_common import BENCH  # noqa: E402

KS = (2, 5, 8)
HYBRID_BASELINE = True  # also the BM25 + dense row (the bm25 extra)
WARM_CACHE = False  # set by main: the cache folder held embeddings or readings before this run
SETS = {  # name -> (data folder, keep titles, entity-source sets of the graph rows)
    "2wiki": ("multihop-2wiki", True, [["titles"], ["ner"]]),
    "2wiki-notitles": ("multihop-2wiki", False, [["ner"]]),
    "musique-notitles": ("multihop-musique", False, [["ner"]]),
    "musique": ("multihop-musique", True, [["titles"], ["ner"]]),
}
PUBLISHED = {
    "multihop-2wiki": "all-evidence@8 on these 51 questions (fast-graphrag's README): vector search (OpenAI "
    "text-embedding-3-small) 0.49, LightRAG 0.47, GraphRAG (nano-graphrag) 0.75, fast-graphrag 0.96",
    "multihop-musique": "R@2/R@5 on the 1,000-question MuSiQue test subset (other encoders): BM25 32.3/41.2, "
    "Contriever 34.8/46.6, ColBERTv2 37.9/49.2, HippoRAG 40.9/51.9 (HippoRAG, Table 2); R@5 NV-Embed-v2 (7B) 69.7, "
    "RAPTOR 57.8, HippoRAG 2 74.7 (HippoRAG 2, Table 3)",
}


def load_set(folder: str, titles: bool):
    """Documents (one passage each) and questions with ``gold`` ids; without titles, ids are opaque."""
    from llama_index.core import Document

    data = BENCH / folder
    records = [json.loads(line) for line in (data / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if line]
    questions = [
        json.loads(line) for line in (data / "questions.jsonl").read_text(encoding="utf-8").splitlines() if line
    ]
    rename = {r["id"]: (r["id"] if titles else f"p{i:04d}") for i, r in enumerate(records)}
    docs = [
        Document(
            id_=rename[r["id"]],
            text=r["text"],
            metadata={"doc_id": rename[r["id"]], **({"title": r["title"]} if titles else {})},
            excluded_embed_metadata_keys=["doc_id"],
            excluded_llm_metadata_keys=["doc_id"],
        )
        for r in records
    ]
    for q in questions:
        q["gold"] = [rename[g] for g in q["gold_ids"]]
    return docs, questions


def score(ranked_ids: list[list[str]], questions: list[dict]) -> dict[str, float]:
    """Recall@k and all-evidence@k for k in KS, averaged over questions."""
    out: dict[str, float] = {}
    for k in KS:
        shares = [sum(g in ids[:k] for g in q["gold"]) / len(q["gold"]) for ids, q in zip(ranked_ids, questions)]
        out[f"R@{k}"] = 100 * statistics.mean(shares)
        out[f"all@{k}"] = statistics.mean(s == 1.0 for s in shares)
    return out


def retrieve_all(retriever: Any, questions: list[dict]) -> tuple[list[list[str]], float]:
    from llama_index.core.schema import QueryBundle

    ranked, start = [], time.perf_counter()
    for q in questions:
        ranked.append([h.node.ref_doc_id for h in retriever.retrieve(QueryBundle(q["question"]))])
    return ranked, 1000 * (time.perf_counter() - start) / len(questions)


# ---------------------------------------------------------------------- caches (outside the library)


def cached_embedding(inner: Any, cache_dir: Path | None) -> Any:
    """``inner`` with its vectors kept in ``cache_dir`` by text (None: ``inner`` itself)."""
    if cache_dir is None:
        return inner
    import numpy as np
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.bridge.pydantic import PrivateAttr

    path = cache_dir / f"embeddings-{hashlib.sha1(inner.model_name.encode()).hexdigest()[:10]}.npz"

    class CachedEmbedding(BaseEmbedding):
        _inner: Any = PrivateAttr()
        _vectors: dict[str, list[float]] = PrivateAttr(default_factory=dict)
        _dirty: bool = PrivateAttr(default=False)

        def __init__(self) -> None:
            super().__init__(model_name=inner.model_name, embed_batch_size=inner.embed_batch_size)
            self._inner = inner
            if path.exists():
                with np.load(path) as data:
                    self._vectors = dict(zip(data["keys"].tolist(), data["vectors"].tolist()))

        def save(self) -> None:
            if self._dirty:
                keys = list(self._vectors)
                np.savez(path, keys=np.array(keys), vectors=np.array([self._vectors[k] for k in keys]))
                self._dirty = False

        def _many(self, texts: list[str], query: bool) -> list[list[float]]:
            keys = [("q:" if query else "t:") + hashlib.sha1(t.encode()).hexdigest() for t in texts]
            todo = [t for t, k in zip(texts, keys) if k not in self._vectors]
            if todo:
                vectors = (
                    [self._inner.get_query_embedding(t) for t in todo]
                    if query
                    else self._inner.get_text_embedding_batch(todo)
                )
                for t, v in zip(todo, vectors):
                    self._vectors[("q:" if query else "t:") + hashlib.sha1(t.encode()).hexdigest()] = list(v)
                self._dirty = True
            return [self._vectors[k] for k in keys]

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._many([query], True)[0]

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return self._many([text], False)[0]

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return self._many(texts, False)

    return CachedEmbedding()


def cache_readings(linker: Any, cache_dir: Path | None) -> None:
    """Keep the ``ner`` source's spaCy readings in ``cache_dir`` by text (the linker reads only the rest)."""
    if cache_dir is None or "ner" not in linker.sources:
        return
    extractor = linker._ner_extractor()
    import inspect

    from llama_index_kgplus.entity_graph import _ner

    code = hashlib.sha1(inspect.getsource(_ner).encode()).hexdigest()  # a change of the reading code: new cache
    config = json.dumps(
        [
            extractor.model,
            extractor.labels,
            extractor.noun_phrases,
            extractor.parser,
            extractor.recognizer,
            extractor.compound_nouns,
            code,
        ]
    )
    path = cache_dir / f"ner-{hashlib.sha1(config.encode()).hexdigest()[:10]}.json"
    stored = json.loads(path.read_text()) if path.exists() else {}
    original = extractor.extract

    def extract(texts, on_progress=None):
        keys = [hashlib.sha1(t.encode()).hexdigest() for t in texts]
        todo = [t for t, k in zip(texts, keys) if k not in stored]
        if todo:
            for t, found in zip(todo, original(todo)):
                stored[hashlib.sha1(t.encode()).hexdigest()] = [[e.name, list(e.aliases)] for e in found]
            path.write_text(json.dumps(stored))
        return [[_ner.NamedEntity(name, tuple(aliases)) for name, aliases in stored[k]] for k in keys]

    extractor.extract = extract


# ---------------------------------------------------------------------- one set


def build(docs, embed_model, sources, cache_dir, linker_kwargs, synonyms=None):
    from llama_index_kgplus import build_index
    from llama_index_kgplus.entity_graph import EntityGraph, EntityLinker

    start = time.perf_counter()
    linker = EntityLinker.from_defaults(sources, show_progress=False, **linker_kwargs) if sources else None
    if linker is not None:
        cache_readings(linker, cache_dir)
    index = build_index(
        docs, None, embed_model=embed_model, extra_transformations=[linker] if linker else [], show_progress=False
    )
    graph = None
    if linker is not None:
        graph = EntityGraph.from_nodes(index.docstore.docs.values(), linker.dictionary_, index_id=index.index_id)
        if synonyms is not None:
            graph.link_similar_entities(embed_model, threshold=synonyms)
    return index, graph, time.perf_counter() - start, (linker.llm_calls_ if linker else 0)


def run_set(name, embed_model, variants, cache_dir, sources_override, linker_kwargs, synonyms=None, query_model=None):
    from llama_index_kgplus.entity_graph import EntityGraphRetriever

    folder, titles, source_sets = SETS[name]
    if sources_override:
        source_sets = [s for s in sources_override if titles or "titles" not in s]
    docs, questions = load_set(folder, titles)
    cached = " (cached)" if WARM_CACHE else ""
    print(f"\n## {name}: {len(questions)} questions, {len(docs)} passages{'' if titles else ', no titles'}\n")
    print("| retrieval | R@2 | R@5 | all-ev@5 | all-ev@8 | index s | LLM calls | query ms |")
    print("|---|---|---|---|---|---|---|---|")
    rows = {}

    def row(label, ranked, ms, seconds, calls):
        figures = score(ranked, questions)
        rows[label] = figures
        print(
            f"| {label} | {figures['R@2']:.1f} | **{figures['R@5']:.1f}** | {figures['all@5']:.2f} | "
            f"{figures['all@8']:.2f} | {seconds:.1f}{cached} | {calls} | {ms:.0f} |",
            flush=True,
        )

    index, _, seconds, _ = build(docs, embed_model, None, cache_dir, linker_kwargs)
    row(
        f"dense ({embed_model.model_name})",
        *retrieve_all(index.as_retriever(similarity_top_k=max(KS)), questions),
        seconds,
        0,
    )
    if HYBRID_BASELINE:
        from llama_index_kgplus.entity_graph._hybrid import HybridRetriever

        hybrid = HybridRetriever.from_index(index, similarity_top_k=max(KS))
        row("BM25 + dense (scaled-score fusion, 0.5 each)", *retrieve_all(hybrid, questions), seconds, 0)
    for sources, threshold in [(s, None) for s in source_sets] + [(s, synonyms) for s in source_sets if synonyms]:
        index, graph, seconds, calls = build(docs, embed_model, sources, cache_dir, linker_kwargs, threshold)
        for variant, settings in variants:
            retriever = EntityGraphRetriever.from_index(
                index, graph, similarity_top_k=max(KS), embed_model=query_model or embed_model, **settings
            )
            retriever.warm_up()
            ranked, ms = retrieve_all(retriever, questions)
            label = "+".join(sources) + (f" + SIMILAR_TO >= {threshold}" if threshold else "")
            row(f"graph: {label}{'' if variant == 'defaults' else ', ' + variant}", ranked, ms, seconds, calls)
    print(f"\nPublished: {PUBLISHED[folder]}.")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="2wiki,2wiki-notitles,musique-notitles", help=f"of {', '.join(SETS)}")
    parser.add_argument("--sources", default=None, help="entity-source sets for every set, e.g. 'titles,ner'")
    parser.add_argument("--variants", default='[["defaults", {}]]', help="JSON list of [name, settings]")
    parser.add_argument("--linker", default="{}", help="JSON EntityLinker keywords (e.g. ner settings)")
    parser.add_argument(
        "--synonyms", type=float, default=None, help="also rows with SIMILAR_TO edges at this cosine (name embeddings)"
    )
    parser.add_argument(
        "--embed-model", default=None, help="embedding model spec (default: $KGPLUS_EMBED_MODEL, else the packaged one)"
    )
    parser.add_argument("--cache", default=None, help="folder for the embedding and spaCy caches")
    parser.add_argument(
        "--tables", default="main", help="main: the sets; squad: single-hop SQuAD (hit@8), each variant too"
    )
    args = parser.parse_args()

    from llama_index_kgplus.llm import embed_model_from_spec

    cache_dir = Path(args.cache) if args.cache else None
    if cache_dir:
        cache_dir.mkdir(parents=True, exist_ok=True)
        global WARM_CACHE
        WARM_CACHE = any(cache_dir.glob("embeddings-*")) or any(cache_dir.glob("ner-*"))
    query_model = embed_model_from_spec(args.embed_model)
    embed_model = cached_embedding(query_model, cache_dir)
    variants = [tuple(v) for v in json.loads(args.variants)]
    if any(settings.get("llm_steps") for _, settings in variants):  # the query-time LLM step: the local default
        from llama_index.core import Settings

        from llama_index_kgplus.llm import llm_from_spec

        Settings.llm = llm_from_spec(max_new_tokens=48)
    sources = [s.split("+") for s in args.sources.split(",")] if args.sources else None
    try:
        if "main" in args.tables.split(","):
            for name in args.sets.split(","):
                run_set(
                    name, embed_model, variants, cache_dir, sources, json.loads(args.linker), args.synonyms, query_model
                )
        if "squad" in args.tables.split(","):
            from multihop_2wiki import single_hop

            single_hop(embed_model, [None, ["titles"], ["titles", "ner"]], variants=variants)
    finally:
        if cache_dir:
            embed_model.save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
