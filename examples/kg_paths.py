from llama_index_kgplus import KGAugmentedQueryEngine, KGPathRetriever, import_kg
from llama_index_kgplus.graph_stores import ladybug_uri
from llama_index_kgplus.llm import llm_from_spec
from llama_index_kgplus.sample import SAMPLE_KG_NODES, SAMPLE_KG_RELATIONSHIPS

store = ladybug_uri("kg.lbug")  # embedded; or "falkordb://host:6379", "neo4j://host:7687" (credentials: environment)
import_kg(store, SAMPLE_KG_NODES, SAMPLE_KG_RELATIONSHIPS)  # the UMLS semantic network, neo4j-admin CSV
retriever = KGPathRetriever.from_defaults(store, max_hops=2, max_paths=5)
question = "How is a virus related to a disease or syndrome?"
for hit in retriever.retrieve(question):
    print(hit.node.text)  # virus -[causes]-> disease or syndrome
engine = KGAugmentedQueryEngine.from_defaults(retriever, llm=llm_from_spec())  # add retriever=... for passages
print(engine.query(question))
