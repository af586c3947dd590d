"""The offline defaults: data folder, GGUF assembly and verification, clear errors."""

from __future__ import annotations

import dataclasses
import hashlib
import sys
import textwrap
from pathlib import Path

import pytest

from llama_index_kgplus import _defaults
from llama_index_kgplus.errors import KGPlusSetupError
from llama_index_kgplus.graph_stores._uri import default_graph_store_uri
from llama_index_kgplus.llm import llm_from_spec
from llama_index_kgplus.llm._local import chatml_messages_to_prompt, local_model_path


@pytest.fixture
def chunked_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> _defaults.GGUFModel:
    """A tiny GGUF 'model' shipped as three chunk packages, exactly like the real PyPI chunk packages."""
    payload = b"GGUF" + bytes(range(256)) * 40
    pieces = [payload[:3000], payload[3000:7000], payload[7000:]]
    for i, piece in enumerate(pieces, 1):
        pkg = tmp_path / "site" / f"fake_chunk_part{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "data" / "part.bin").write_bytes(piece)
        (pkg / "__init__.py").write_text(
            textwrap.dedent(
                """
                import os
                def get_part_path():
                    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "part.bin")
                """
            )
        )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    spec = _defaults.GGUFModel("fake", "fake_chunk_part", 3, "fake.gguf")
    monkeypatch.setitem(_defaults.LLM_MODELS, "fake", spec)
    monkeypatch.setenv(_defaults.MODELS_DIR_ENV, str(tmp_path / "models"))
    yield spec
    for i in range(1, 4):
        sys.modules.pop(f"fake_chunk_part{i}", None)


def test_home_and_models_dir_follow_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(_defaults.HOME_ENV, str(tmp_path / "h"))
    monkeypatch.delenv(_defaults.MODELS_DIR_ENV, raising=False)
    assert _defaults.kgplus_home() == tmp_path / "h"
    assert _defaults.models_dir() == tmp_path / "h" / "models"
    assert default_graph_store_uri() == f"ladybug://{tmp_path / 'h' / 'graph.lbug'}"
    monkeypatch.setenv(_defaults.MODELS_DIR_ENV, str(tmp_path / "m"))
    assert _defaults.models_dir() == tmp_path / "m"


def test_gguf_is_joined_once_and_verified(chunked_model, tmp_path):
    path = _defaults.gguf_path("fake")
    assert path == tmp_path / "models" / "fake.gguf"
    parts = b"".join(p.read_bytes() for p in chunked_model.part_paths())
    assert path.read_bytes() == parts
    assert not path.with_suffix(".json").exists()  # no digest recorded at assembly: the pinned one is the reference
    mtime = path.stat().st_mtime_ns
    assert _defaults.gguf_path("fake", check_sha256=True) == path
    assert path.stat().st_mtime_ns == mtime  # not joined again


@pytest.fixture
def pinned_model(chunked_model, monkeypatch) -> _defaults.GGUFModel:
    """The tiny chunked model with the published digest of its joined file pinned, as the real models have."""
    data = b"".join(p.read_bytes() for p in chunked_model.part_paths())
    pinned = _defaults.PinnedFile(hashlib.sha256(data).hexdigest(), len(data), "the fake publisher's fake.gguf")
    spec = dataclasses.replace(chunked_model, pinned=pinned)
    monkeypatch.setitem(_defaults.LLM_MODELS, "fake", spec)
    return spec


def test_a_pinned_model_is_compared_while_joining_and_a_mismatch_leaves_nothing(pinned_model, monkeypatch):
    path = _defaults.gguf_path("fake")
    assert hashlib.sha256(path.read_bytes()).hexdigest() == pinned_model.pinned.sha256
    path.unlink()
    wrong = dataclasses.replace(pinned_model.pinned, sha256="0" * 64)
    monkeypatch.setitem(_defaults.LLM_MODELS, "fake", dataclasses.replace(pinned_model, pinned=wrong))
    with pytest.raises(KGPlusSetupError, match="are not the published the fake publisher's fake.gguf") as caught:
        _defaults.gguf_path("fake")
    assert "\n" not in str(caught.value) and "pip install --force-reinstall 'llama-index-kgplus[local]'" in str(
        caught.value
    )
    assert list(path.parent.iterdir()) == []  # neither the model nor a partial file


def test_a_changed_model_file_is_rejoined_when_checked(pinned_model):
    path = _defaults.gguf_path("fake")
    path.write_bytes(path.read_bytes()[:100])  # truncated: the size no longer matches, so it is re-joined
    assert _defaults.gguf_path("fake").stat().st_size == pinned_model.pinned.size
    data = bytearray(path.read_bytes())
    data[10] ^= 0xFF  # same size, different content: only the sha256 sees it (`kgplus models prepare`)
    path.write_bytes(bytes(data))
    assert _defaults.gguf_path("fake").read_bytes() == bytes(data)  # a load checks size and magic only
    assert hashlib.sha256(_defaults.gguf_path("fake", check_sha256=True).read_bytes()).hexdigest() == (
        pinned_model.pinned.sha256
    )


def test_user_gguf_path_is_checked(tmp_path):
    bogus = tmp_path / "model.gguf"
    bogus.write_bytes(b"PK\x03\x04 not a model")
    with pytest.raises(KGPlusSetupError, match="not a GGUF file"):
        local_model_path(bogus)
    with pytest.raises(KGPlusSetupError, match="does not exist"):
        local_model_path(tmp_path / "missing.gguf")
    with pytest.raises(KGPlusSetupError, match="neither a known model"):
        local_model_path("gpt-17")


def test_missing_chunk_package_names_the_fix(monkeypatch):
    monkeypatch.setitem(_defaults.LLM_MODELS, "ghost", _defaults.GGUFModel("ghost", "no_such_chunk_part", 2, "g.gguf"))
    with pytest.raises(KGPlusSetupError, match="no-such-chunk-part1 is missing.*make setup"):
        _defaults.gguf_path("ghost")


def test_unwritable_model_cache_is_reported(chunked_model, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(_defaults.MODELS_DIR_ENV, str(blocker / "models"))
    with pytest.raises(KGPlusSetupError, match="not writable.*KGPLUS_HOME"):
        _defaults.gguf_path("fake")


def test_packaged_models_are_the_published_files():
    for name, spec in _defaults.LLM_MODELS.items():
        path = _defaults.gguf_path(name, check_sha256=True)  # hashed: byte for byte the publisher's file
        assert path.read_bytes()[:4] == b"GGUF"
        assert path.stat().st_size == sum(p.stat().st_size for p in spec.part_paths()) == spec.pinned.size


@pytest.mark.model  # llama.cpp reads the (corrupt) model file
def test_corrupt_gguf_that_llama_cpp_rejects_gets_a_clear_error(tmp_path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\x00" * 64)
    with pytest.raises(KGPlusSetupError, match="could not load"):
        llm_from_spec(broken)


def test_chatml_prompt():
    from llama_index.core.llms import ChatMessage

    prompt = chatml_messages_to_prompt([ChatMessage(role="user", content="hi")])
    assert prompt.endswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    assert "<|im_start|>system" in prompt


def test_a_llama_cpp_build_with_amx_kernels_is_refused_with_the_rebuild(monkeypatch):
    # mocked: the suite's llama.cpp is built without AMX (it crashes here), so the build info is what is replaced
    import llama_cpp

    from llama_index_kgplus.llm._local import check_llama_cpp_build

    info = llama_cpp.llama_print_system_info().decode()
    assert "AMX_INT8 = 1" not in info  # the build `make setup` made
    monkeypatch.setattr(llama_cpp, "llama_print_system_info", lambda: (info + "AMX_INT8 = 1 | ").encode())
    with pytest.raises(KGPlusSetupError, match="built with llama.cpp's AMX kernels.*-DGGML_AMX_INT8=OFF"):
        check_llama_cpp_build()  # the first step of loading a packaged or any GGUF model
