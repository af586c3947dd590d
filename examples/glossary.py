from llama_index_kgplus import Glossary, GlossaryQueryEngine, build_index, load_corpus
from llama_index_kgplus.llm import embed_model_from_spec, llm_from_spec
from llama_index_kgplus.sample import SAMPLE_DOCS, sample_glossary_path

embed_model, llm = embed_model_from_spec(), llm_from_spec()
index = build_index(load_corpus(SAMPLE_DOCS), "index", embed_model=embed_model)
glossary = Glossary.load(sample_glossary_path())  # JSON or CSV: term, explanation, aliases
engine = GlossaryQueryEngine.from_defaults(glossary, index=index, llm=llm, embed_model=embed_model, context_budget=512)
response = engine.query("How can a function clean up resources whether or not an exception occurs?")
print(response.metadata["glossary_terms"], "->", response.metadata["rewritten_query"])
print(response.metadata["fallback_reason"] or "rewrite accepted", "|", response)
