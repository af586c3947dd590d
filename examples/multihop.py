from llama_index_kgplus import EntityGraph, EntityGraphRetriever, EntityLinker, build_index, load_corpus
from llama_index_kgplus.llm import embed_model_from_spec
from llama_index_kgplus.sample import SAMPLE_MULTIHOP_DOCS

linker = EntityLinker.from_defaults(["titles"])  # or "ner", "kg", "glossary": no LLM call at indexing
index = build_index(
    load_corpus(SAMPLE_MULTIHOP_DOCS), "multihop", embed_model=embed_model_from_spec(), extra_transformations=[linker]
)
graph = EntityGraph.from_nodes(index.docstore.docs.values(), linker.dictionary_, index_id=index.index_id)
graph.persist("multihop")  # EntityGraph.load("multihop") reads it back
retriever = EntityGraphRetriever.from_index(index, graph, similarity_top_k=4)  # personalized PageRank
for hit in retriever.retrieve("When did Lothair II's mother die?"):
    print(hit.node.metadata["doc_id"], [step.get("edge") for step in hit.node.metadata["entity_graph"]["path"]])
