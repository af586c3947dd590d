"""Retrieval hit rate of flat chunks vs summary hierarchies (semantic, RAPTOR) with collapsed, tree and evidence
retrieval, on single-fact questions, on questions that span 2 or 3 paragraphs of one article and on
whole-article questions.

Question sets (``question_sets`` in hierarchy_common.py, fixed seed): per article 50 single-fact questions,
20 pairs and 10 triples of questions about paragraphs at least two apart, joined into one text. A retrieval is
a hit when every part has one of its gold answer strings (case-insensitive) in the retrieved text.
``hit@5``: the first 5 nodes, whatever their length; ``hit@B``: nodes in rank order up to B cl100k tokens
(the same budget for every configuration). The whole-article questions (``overview_questions``: "Give an
overview of IPCC." and two other phrasings per article) are not hit or miss: their figure is the mean share of
the article's paragraphs that the retrieved text reaches (a paragraph is reached when a gold answer string of
one of its SQuAD questions, found in no other paragraph of the set, is in the text as whole words). It reads
the nodes that hierarchy_build.py saved (no LLM call)::

    .venv/bin/python benchmarks/hierarchy_build.py --articles heldout --llm qwen2.5-coder-1.5b   # once
    .venv/bin/python benchmarks/hierarchy_retrieval.py --articles heldout [--budgets 256,512,1024]

``--variants`` adds evidence-mode settings (``summary_margin:coverage[:whole]``, e.g. ``inf:0.5,0.05:0:whole``;
``whole``: the query is not split into its sentences).
``--compress N``: for ``hit@B``, the first N nodes go through ``ContextCompressor(context_budget=B)`` (the
sentences nearest the question, within B tokens) instead of being cut whole at B tokens.
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

from hierarchy_common import (  # noqa: E402
    coverage,
    is_hit,
    load_articles,
    overview_questions,
    question_sets,
    read_nodes,
    results_dir,
)

SYSTEMS = ("kgplus-semantic", "kgplus-raptor", "kgplus-raptor-pca", "raptorpack")


def make_index(nodes, embed_model):
    from llama_index.core import StorageContext, VectorStoreIndex

    storage = StorageContext.from_defaults()
    storage.docstore.add_documents(nodes)
    return VectorStoreIndex(nodes, storage_context=storage, embed_model=embed_model, show_progress=False)


def parse_variant(text: str) -> dict:
    parts = text.split(":")
    if len(parts) not in (2, 3) or parts[2:] not in ([], ["whole"]):
        raise SystemExit(f"--variants: {text!r} is not summary_margin:coverage[:whole]")
    return {"summary_margin": float(parts[0]), "coverage": float(parts[1]), "split_questions": len(parts) == 2}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--articles", default="dev", help="dev (default), heldout, or comma-separated article ids")
    parser.add_argument("--budgets", default="256,512,1024", help="token budgets (comma-separated)")
    parser.add_argument("--beam", type=int, default=4, help="tree traversal: nodes kept per level (default 4)")
    parser.add_argument("--suffix", default="", help="read <system><suffix>.jsonl (e.g. -legacy, -extractive)")
    parser.add_argument("--variants", default="", help="extra evidence settings, summary_margin:coverage[:whole],...")
    parser.add_argument("--sets", default="single,pairs,triples,overview", help="question sets to score")
    parser.add_argument("--compress", type=int, default=0, help="hit@B: compress the first N nodes to B tokens")
    parser.add_argument(
        "--modes", default="", help="only these modes (comma-separated labels), e.g. collapsed,evidence"
    )
    args = parser.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]
    share_at = 512 if 512 in budgets else budgets[-1]  # the budget whose summary share is printed

    from llama_index.core.schema import MetadataMode, QueryBundle
    from llama_index.core.utils import get_tokenizer

    from llama_index_kgplus import HierarchicalRetriever
    from llama_index_kgplus.compression import ContextCompressor
    from llama_index_kgplus.llm import embed_model_from_spec

    embed_model = embed_model_from_spec()
    tokenizer = get_tokenizer()
    doc_ids = [d.id_ for d in load_articles(args.articles)]
    every_set = {**question_sets(doc_ids), "overview": overview_questions(doc_ids)}
    sets = {k: v for k, v in every_set.items() if k in args.sets.split(",")}
    # all-MiniLM-L6-v2 embeds queries and texts the same way, so a batch of text embeddings is the query embedding
    vectors = {k: embed_model.get_text_embedding_batch([q["question"] for q in qs]) for k, qs in sets.items()}

    out_dir = results_dir(args.articles)
    systems = {}
    for name in SYSTEMS:
        path = out_dir / f"{name}{args.suffix}.jsonl"
        if path.is_file():
            systems[name + args.suffix] = read_nodes(path)
    if not systems:
        print(f"no nodes under {out_dir}: run benchmarks/hierarchy_build.py first", file=sys.stderr)
        return 1
    base = next(iter(systems.values()))
    evidence = [("evidence", {}), ("evidence-tree", {"evidence_source": "tree"})]
    evidence += [(f"evidence {v}", parse_variant(v)) for v in args.variants.split(",") if v]
    modes = [("collapsed", {}), ("tree", {}), *evidence]
    flat_modes = [("collapsed", {}), ("evidence", {}), *evidence[2:]]  # evidence on chunks alone: no summaries
    configs = [("flat chunks", [n for n in base if n.metadata.get("level", 0) == 0], flat_modes)]
    for name, nodes in systems.items():
        configs.append((name, nodes, [("collapsed", {})] if name.startswith("raptorpack") else modes))

    print(f"articles {', '.join(doc_ids)}; " + ", ".join(f"{len(qs)} {k}" for k, qs in sets.items()))
    compressed = f"; hit@B: the first {args.compress} nodes compressed to B tokens" if args.compress else ""
    print(f"budgets {budgets} cl100k tokens; tree beam {args.beam}{compressed}\n")
    cuts = [("hit@5", 5, None)] + [(f"hit@{b}", args.compress or 40, b) for b in budgets]
    compressor = ContextCompressor.from_defaults(embed_model=embed_model)  # one sentence cache for every budget
    head = f"{'system':<26} {'mode':<22} " + " ".join(f"{c:>8}" for c, _, _ in cuts) + f" {'sum%':>5}"
    results: dict[str, list[str]] = {k: [head, "-" * len(head)] for k in sets}
    only = set(filter(None, args.modes.split(",")))
    for name, nodes, config_modes in configs:
        config_modes = [m for m in config_modes if not only or m[0] in only]
        index = make_index(nodes, embed_model)
        for mode_label, settings in config_modes:
            started = time.perf_counter()
            mode = "evidence" if mode_label.startswith("evidence") else mode_label
            rows = {k: f"{name:<26} {mode_label:<22} " for k in sets}
            for _label, top_k, budget in cuts:
                cut_whole = budget if not args.compress else None
                retriever = HierarchicalRetriever.from_index(
                    index, mode=mode, similarity_top_k=top_k, beam_width=args.beam, token_budget=cut_whole, **settings
                )
                for set_name, questions in sets.items():
                    hits, summary_tokens, all_tokens = 0, 0, 0
                    for question, vector in zip(questions, vectors[set_name]):
                        bundle = QueryBundle(query_str=question["question"], embedding=vector)
                        found = retriever.retrieve(bundle)
                        if budget is not None and args.compress:
                            compressor.context_budget = budget
                            found = compressor.postprocess_nodes(found, bundle)
                        text = "\n".join(h.node.get_content(MetadataMode.NONE) for h in found)
                        if "paragraphs" in question:  # a whole-article question scores the share it reaches
                            hits += coverage(text, question["paragraphs"])
                        else:
                            hits += is_hit(text, question["answers"])
                        if budget == share_at:
                            for h in found:
                                n = len(tokenizer(h.node.get_content(MetadataMode.NONE)))
                                all_tokens += n
                                summary_tokens += n if h.node.metadata.get("level", 0) > 0 else 0
                    rows[set_name] += f"{hits / len(questions):>8.3f} "
                    if budget == share_at:
                        share = 100 * summary_tokens / all_tokens if all_tokens else 0.0
                        rows[set_name + ":share"] = f"{share:>5.0f}"
            for set_name in sets:
                results[set_name].append(rows[set_name] + rows.get(set_name + ":share", ""))
            print(f"  {name} {mode_label}: {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    for set_name, lines in results.items():
        scored = "; mean share of the article's paragraphs reached" if set_name == "overview" else ""
        print(f"## {set_name} ({len(sets[set_name])} questions{scored})\n")
        print("\n".join(lines) + "\n")
    print("hit@5: a gold string of every part inside the first 5 retrieved nodes; hit@B: inside the nodes that fit")
    print(f"in B tokens, in rank order; sum%: share of the tokens retrieved at {share_at} that come from summaries.")
    if "overview" in sets:
        print("overview: the same cuts, scored by the mean share of the article's paragraphs reached (not a hit).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
