"""Retrieval hit rate at an equal token budget: flat chunks vs semantic summaries vs RAPTOR summaries,
collapsed and tree traversal (and RaptorPack's tree, collapsed, for reference).

A question is a hit when one of its gold answer strings (case-insensitive) appears in the retrieved text.
Every configuration gets the same token budget (cl100k tokens of node text, filled greedily in rank order).
Questions: every longdocs-squad question about the first 3 articles (the corpus of hierarchy_build.py).
It reads the nodes that hierarchy_build.py saved (no LLM call here)::

    .venv/bin/python benchmarks/hierarchy_build.py         # once: builds and saves the nodes
    .venv/bin/python benchmarks/hierarchy_retrieval.py [--budgets 256,512,1024]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from hierarchy_common import OUT_DIR, load_articles, load_questions, read_nodes  # noqa: E402


def make_index(nodes, embed_model):
    from llama_index.core import StorageContext, VectorStoreIndex

    storage = StorageContext.from_defaults()
    storage.docstore.add_documents(nodes)
    return VectorStoreIndex(nodes, storage_context=storage, embed_model=embed_model, show_progress=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budgets", default="256,512,1024", help="token budgets (comma-separated)")
    parser.add_argument("--beam", type=int, default=4, help="tree traversal: nodes kept per level (default 4)")
    args = parser.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]

    from llama_index.core.schema import MetadataMode, QueryBundle
    from llama_index.core.utils import get_tokenizer

    from llama_index_kgplus import HierarchicalRetriever, defaults

    embed_model = defaults.default_embed_model()
    tokenizer = get_tokenizer()
    doc_ids = {d.id_ for d in load_articles()}
    questions = load_questions(doc_ids)
    vectors = embed_model.get_text_embedding_batch([q["question"] for q in questions])
    # all-MiniLM-L6-v2 embeds queries and texts the same way, so a batch of text embeddings is the query embedding

    systems = {}
    for name in ("kgplus-semantic", "kgplus-raptor", "kgplus-raptor-pca", "raptorpack"):
        path = OUT_DIR / f"{name}.jsonl"
        if path.is_file():
            systems[name] = read_nodes(path)
    if not systems:
        print(f"no nodes under {OUT_DIR}: run benchmarks/hierarchy_build.py first", file=sys.stderr)
        return 1
    base = systems.get("kgplus-raptor") or next(iter(systems.values()))
    configs = [("flat chunks", [n for n in base if n.metadata.get("level", 0) == 0], ("collapsed",))]
    for name, nodes in systems.items():
        configs.append((name, nodes, ("collapsed",) if name == "raptorpack" else ("collapsed", "tree")))

    print(
        f"{len(questions)} questions about {', '.join(sorted(doc_ids))}; budgets {budgets} tokens; tree beam {args.beam}"
    )
    header = f"{'system':<20} {'mode':<10} {'nodes':>6} " + " ".join(
        f"{'hit@' + str(b):>8} {'sum%':>5}" for b in budgets
    )
    print(header)
    print("-" * len(header))
    for name, nodes, modes in configs:
        index = make_index(nodes, embed_model)
        for mode in modes:
            started = time.perf_counter()
            row = f"{name:<20} {mode:<10} {len(nodes):>6} "
            for budget in budgets:
                retriever = HierarchicalRetriever.from_index(
                    index, mode=mode, similarity_top_k=40, beam_width=args.beam, token_budget=budget
                )
                hits, summary_tokens, all_tokens = 0, 0, 0
                for question, vector in zip(questions, vectors):
                    found = retriever.retrieve(QueryBundle(query_str=question["question"], embedding=vector))
                    text = "\n".join(h.node.get_content(MetadataMode.NONE) for h in found).lower()
                    hits += any(a.lower() in text for a in question["answers"])
                    for h in found:
                        n = len(tokenizer(h.node.get_content(MetadataMode.NONE)))
                        all_tokens += n
                        summary_tokens += n if h.node.metadata.get("level", 0) > 0 else 0
                share = 100 * summary_tokens / all_tokens if all_tokens else 0.0
                row += f"{hits / len(questions):>8.3f} {share:>5.0f}"
            print(row + f"   ({time.perf_counter() - started:.0f} s)", flush=True)
    print("\nhit@B: share of questions with a gold answer string inside the retrieved text of at most B tokens;")
    print("sum%: share of the retrieved tokens that come from summary nodes.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
