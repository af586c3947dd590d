from llama_index_kgplus import GraphRAGIndex, load_corpus
from llama_index_kgplus.graphrag import CommunityReportGenerator, GraphExtractor
from llama_index_kgplus.llm import llm_from_spec
from llama_index_kgplus.sample import SAMPLE_MULTIHOP_DOCS

documents = load_corpus(SAMPLE_MULTIHOP_DOCS)[4:6]  # two short Wikipedia passages: Lothair II and his mother
# small limits keep a local model quick (defaults: 512-token chunks, up to 10 entities, 5-10 findings per report)
extractor = GraphExtractor(min_entities=1, max_entities=3, max_relationships=3, max_description_chars=100)
reporter = CommunityReportGenerator(min_findings=2, max_findings=2, max_chars=100)
index = GraphRAGIndex.from_defaults("grag", llm=llm_from_spec(), chunk_size=128, extractor=extractor, reporter=reporter)
index.build(documents)  # an LLM call per chunk (entities, relationships) and per community report: IndexStats
engine = index.as_query_engine(response_type="one short paragraph", max_reports=3)  # the 3 best-rated reports
response = engine.query("How are these people related?")  # map: key points per report; reduce: one answer
print(response)
print([doc["title"] for doc in response.metadata["documents"]])  # cited documents; their passages: source_nodes
