from llama_index.core.query_engine import RetrieverQueryEngine

from llama_index_kgplus import EntityGraph, EntityGraphRetriever, EntityLinker, EvalRunner, build_index, load_corpus
from llama_index_kgplus.evaluation import load_dataset, write_report
from llama_index_kgplus.llm import embed_model_from_spec, llm_from_spec
from llama_index_kgplus.sample import SAMPLE_MULTIHOP_DOCS, SAMPLE_MULTIHOP_QUESTIONS

embed_model, llm, linker = embed_model_from_spec(), llm_from_spec(), EntityLinker.from_defaults(["titles"])
index = build_index(load_corpus(SAMPLE_MULTIHOP_DOCS), "mh", embed_model=embed_model, extra_transformations=[linker])
graph = EntityGraph.from_nodes(index.docstore.docs.values(), linker.dictionary_, index_id=index.index_id)
graph_engine = RetrieverQueryEngine.from_args(EntityGraphRetriever.from_index(index, graph), llm=llm)
pipelines = {"vector": index.as_query_engine(llm=llm), "graph": graph_engine}  # any LlamaIndex query engines
questions = load_dataset(SAMPLE_MULTIHOP_QUESTIONS)[:4]  # JSONL: question + gold_ids, answers or ground_truth
records = EvalRunner(questions, pipelines, "eval-out", metrics=["hit@5", "recall@5", "mrr"]).run()
print(write_report(records, list(pipelines), "eval-out")["summary_md"].read_text())  # per_question.csv, plots
