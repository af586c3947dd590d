"""``kgplus demo``: the main job, end to end on the bundled sample and the embedded offline defaults.

It ingests eight pages of the Python tutorial into a persisted vector index under ``$KGPLUS_HOME/demo``,
then answers a few questions with the local LLM and prints each answer with its sources.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from llama_index.core import Settings
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import LLM

from llama_index_kgplus import defaults
from llama_index_kgplus.corpus import load_corpus
from llama_index_kgplus.indexing import build_index, load_index
from llama_index_kgplus.sample import SAMPLE_DOCS

DEMO_QUESTIONS = (
    "How do I create a virtual environment, and how do I activate it?",
    "Why does 0.1 + 0.2 not print exactly 0.3 in Python?",
    "How can a function clean up resources whether or not an exception occurs?",
)


def run_demo(
    *,
    llm: LLM | None = None,
    embed_model: BaseEmbedding | None = None,
    questions: tuple[str, ...] = DEMO_QUESTIONS,
    top_k: int = 3,
    out: TextIO = sys.stdout,
) -> list:
    """Run the demo and return the LlamaIndex ``Response`` objects."""
    embed_model = embed_model or defaults.default_embed_model()
    print(f"[demo] embedding model: {embed_model.model_name}", file=out)
    llm = llm or defaults.default_llm()
    print(f"[demo] LLM: {getattr(llm, 'model_path', llm.metadata.model_name)}", file=out)
    Settings.embed_model, Settings.llm = embed_model, llm

    index_dir = defaults.kgplus_home() / "demo" / "index"
    if (index_dir / "docstore.json").is_file():
        index = load_index(index_dir, embed_model=embed_model)
        print(f"[demo] loaded the vector index from {index_dir}", file=out)
    else:
        docs = load_corpus(SAMPLE_DOCS)
        started = time.perf_counter()
        index = build_index(docs, index_dir, embed_model=embed_model)
        chunks = len(index.docstore.docs)
        print(
            f"[demo] indexed {len(docs)} documents as {chunks} chunks in {time.perf_counter() - started:.1f} s "
            f"-> {index_dir}",
            file=out,
        )

    engine = index.as_query_engine(llm=llm, similarity_top_k=top_k)
    responses = []
    for question in questions:
        started = time.perf_counter()
        response = engine.query(question)
        responses.append(response)
        print(f"\nQ: {question}\nA: {str(response).strip()}", file=out)
        print(f"   ({time.perf_counter() - started:.1f} s) sources:", file=out)
        for hit in response.source_nodes:
            meta = hit.node.metadata
            snippet = " ".join(hit.node.get_content().split())[:110]
            print(f"   - [{meta.get('doc_id')}] {meta.get('title')} (score {hit.score:.2f}): {snippet}...", file=out)
    return responses
