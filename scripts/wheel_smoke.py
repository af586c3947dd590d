"""Install smoke test (scripts/check_wheel.sh): the package as installed from its wheel, on this Python, with
whichever extras were installed. With the ``local`` extra it also embeds with the default embedding model and lets
the default LLM say a few words."""

import importlib.util
import sys
import tempfile

from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

import llama_index_kgplus as kp
from llama_index_kgplus import open_graph_store, sample
from llama_index_kgplus.compression import ContextCompressor
from llama_index_kgplus.errors import GraphStoreError
from llama_index_kgplus.glossary import Glossary
from llama_index_kgplus.kg import EntityMatcher

missing = [name for name in kp.__all__ if not hasattr(kp, name)]
assert not missing, missing
print(sys.version.split()[0], kp.__version__, len(kp.__all__), "public names")
glossary = Glossary.load(sample.sample_glossary_path())
print("glossary terms:", len(glossary), [e.term for e in glossary.match("What does a list comprehension return?")])
matcher = EntityMatcher.from_pairs([("A", "alpha beta"), ("B", "gamma")], [("A", "AB")])
print("entities:", [m.cid for m in matcher.find("alpha  beta and gamma and AB")])
compressor = ContextCompressor.from_defaults(context_budget=12, embed_model=MockEmbedding(embed_dim=8))
nodes = [NodeWithScore(node=TextNode(text="One sentence here. Another sentence there. A third one."), score=0.5)]
kept = compressor.postprocess_nodes(nodes, QueryBundle("sentence"))[0].node.metadata["compression"]["kept_units"]
print("compressed:", kept, "of 3 sentences kept")
try:
    open_graph_store(f"ladybug://{tempfile.mkdtemp()}/smoke.lbug")
    print("embedded graph store: installed")
except GraphStoreError as exc:
    print("embedded graph store:", exc)
if importlib.util.find_spec("onnxruntime") and importlib.util.find_spec("llama_cpp"):  # the local extra
    import numpy as np

    from llama_index_kgplus.llm import embed_model_from_spec, llm_from_spec

    embed_model = embed_model_from_spec()
    cat, feline, quarks = np.array(
        embed_model.get_text_embedding_batch(["A cat sits on the mat.", "A feline rests on a rug.", "Quarks bind."])
    )
    assert cat.shape == (384,) and cat @ feline > cat @ quarks + 0.2, (cat @ feline, cat @ quarks)
    print(f"{type(embed_model).__name__}: 384-d, cat~feline {cat @ feline:.2f} > cat~quarks {cat @ quarks:.2f}")
    reply = llm_from_spec(max_new_tokens=8).complete("Say OK.").text.strip()
    assert reply, "the default LLM generated nothing"
    print(f"default LLM: {reply!r}")
