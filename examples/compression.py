from llama_index_kgplus import ContextCompressor, build_index, load_corpus
from llama_index_kgplus.llm import AnswerUsage, attach_usage, embed_model_from_spec, llm_from_spec, metered
from llama_index_kgplus.sample import SAMPLE_DOCS

embed_model, llm = embed_model_from_spec(), metered(llm_from_spec())  # metered: counts calls and tokens
index = build_index(load_corpus(SAMPLE_DOCS), "index", embed_model=embed_model)
compressor = ContextCompressor.from_defaults(context_budget=512, embed_model=embed_model, llm=llm)  # LLM tokens
engine = index.as_query_engine(llm=llm, similarity_top_k=5, node_postprocessors=[compressor], streaming=True)
response = attach_usage(engine.query("How do I create a virtual environment?"), AnswerUsage(llm))
response.print_response_stream()  # tokens as they come
print("\n", response.metadata["usage"])  # llm_calls, prompt_tokens, completion_tokens, first_token_seconds...
print([hit.node.metadata["compression"]["kept_units"] for hit in response.source_nodes])  # sentences kept
