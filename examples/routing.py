from llama_index_kgplus import KGPlusSources, build_index, import_kg, load_corpus
from llama_index_kgplus.graph_stores import ladybug_uri
from llama_index_kgplus.llm import embed_model_from_spec, llm_from_spec
from llama_index_kgplus.sample import SAMPLE_DOCS, SAMPLE_KG_NODES, SAMPLE_KG_RELATIONSHIPS, SAMPLE_WEATHER_TABLE

embed_model, llm = embed_model_from_spec(), llm_from_spec()  # the packaged defaults
build_index(load_corpus(SAMPLE_DOCS), "index", embed_model=embed_model)  # or kgplus ingest
kg = ladybug_uri("kg.lbug")
import_kg(kg, SAMPLE_KG_NODES, SAMPLE_KG_RELATIONSHIPS)  # or kgplus kg import
tables = {"weather": SAMPLE_WEATHER_TABLE}  # CSV, Parquet, SQLite or DuckDB files
with KGPlusSources(index="index", kg_store=kg, tables=tables, llm=llm, embed_model=embed_model) as sources:
    engine = sources.routed_query_engine()  # what kgplus ask runs
    response = engine.query("What was the total precipitation in 2014?")
    print(response.metadata["route"], response.metadata["sql"], response.metadata["usage"]["llm_calls"])
    print(sources.router().route("How is a virus related to a disease or syndrome?").route)  # kg
