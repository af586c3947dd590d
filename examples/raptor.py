from llama_index_kgplus import HierarchicalRetriever, RaptorSummaryNodeBuilder, build_index, load_corpus
from llama_index_kgplus.llm import embed_model_from_spec, llm_from_spec
from llama_index_kgplus.sample import SAMPLE_MULTIHOP_DOCS

embed_model, llm = embed_model_from_spec(), llm_from_spec()  # the packaged Qwen2.5-Coder-1.5B, via llama.cpp
# RaptorPack(documents, llm=llm, embed_model=embed_model) becomes a transformation of the ingestion pipeline:
builder = RaptorSummaryNodeBuilder.from_defaults(llm=llm, embed_model=embed_model, max_levels=2, random_state=0)
documents = load_corpus(SAMPLE_MULTIHOP_DOCS)[:24]  # 24 short Wikipedia articles
index = build_index(documents, "raptor", embed_model=embed_model, extra_transformations=[builder])
# pack.run(query, mode="collapsed") -> mode="collapsed"; mode="tree_traversal" -> mode="tree"
retriever = HierarchicalRetriever.from_index(index, mode="collapsed", similarity_top_k=5)
hits = retriever.retrieve("Who was Lothair II?")
print(builder.n_summaries_, "summaries; levels of the hits:", [hit.node.metadata.get("level", 0) for hit in hits])
