import json

import pytest

from llama_index_kgplus import InputDataError, load_corpus
from llama_index_kgplus.sample import SAMPLE_DOCS


def write(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_sample_corpus_loads_with_ids_and_titles():
    docs = load_corpus(SAMPLE_DOCS)
    assert len(docs) == 8
    venv = next(d for d in docs if d.id_ == "tutorial/venv")
    assert venv.metadata == {"doc_id": "tutorial/venv", "title": "Virtual Environments and Packages"}


def test_folder_corpus(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "one.txt").write_text("first text")
    (tmp_path / "two.md").write_text("second")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[core]")
    (tmp_path / ".notes.txt").write_text("hidden")
    docs = load_corpus(tmp_path)
    assert [d.id_ for d in docs] == ["a/one", "two"]
    (tmp_path / "two.txt").write_text("same id as two.md")
    with pytest.raises(InputDataError, match=r"two\.md and .*two\.txt would both be document 'two'"):
        load_corpus(tmp_path)


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (['{"id": "a", "text": "x"}', "{oops"], r":2: invalid JSON"),
        (['{"id": "a"}'], r':1: a record needs at least "id" and "text"'),
        (['{"id": "a", "text": "x"}', '{"id": "a", "text": "y"}'], r":2: duplicate document id 'a'"),
        (['{"id": "a", "text": "  "}'], "holds no document with text"),
        (['{"id": "a", "text": ["x", "y"]}'], r':1: "text" must be a string, not a list'),
        (['{"id": "a", "text": {"x": 1}}'], r':1: "text" must be a string, not an object'),
        (['{"id": "a", "text": 3}'], r':1: "text" must be a string, not a number'),
        (['{"id": null, "text": "x"}'], r':1: "id" must be a non-empty string or an integer, not null'),
        (['{"id": ["a"], "text": "x"}'], r":1: \"id\" must be a non-empty string or an integer, not \['a'\]"),
        (['{"id": true, "text": "x"}'], r':1: "id" must be a non-empty string or an integer, not True'),
        (['{"id": "a", "title": 5, "text": "x"}'], r':1: "title" must be a string, not a number'),
    ],
)
def test_bad_jsonl_gives_position(tmp_path, lines, message):
    with pytest.raises(InputDataError, match=message):
        load_corpus(write(tmp_path / "c.jsonl", lines))


def test_empty_document_is_skipped_not_fatal(tmp_path, caplog):
    path = write(tmp_path / "c.jsonl", [json.dumps({"id": "e", "text": ""}), json.dumps({"id": "f", "text": "ok"})])
    assert [d.id_ for d in load_corpus(path)] == ["f"]
    assert "Skipping document 'e'" in caplog.text


def test_non_utf8_and_missing_path(tmp_path):
    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes('{"id": "a", "text": "café"}'.encode("latin-1"))
    with pytest.raises(InputDataError, match="not UTF-8"):
        load_corpus(bad)
    with pytest.raises(InputDataError, match="does not exist"):
        load_corpus(tmp_path / "nope.jsonl")


def test_unicode_line_separators_inside_strings_are_text(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": 7, "text": "one\u2028two\u0085three\u2029"}\r\n', encoding="utf-8")
    [doc] = load_corpus(path)
    assert (doc.id_, doc.text) == ("7", "one\u2028two\u0085three\u2029")


def test_jsonl_read_line_by_line_gives_the_errors_of_a_whole_read(tmp_path):
    from llama_index_kgplus._files import iter_utf8_lines, read_utf8

    path = tmp_path / "c.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"id": "a", "text": "x"}\n{"id": "b", "text": "caf\xe9"}\n')
    messages = []
    for read in (read_utf8, lambda p: list(iter_utf8_lines(p))):
        with pytest.raises(InputDataError, match=r"c.jsonl:2:25: not UTF-8 text \(byte 0xe9 at offset 52\)") as err:
            read(path)
        messages.append(str(err.value))
    assert messages[0] == messages[1]
    path.write_bytes(b'\xef\xbb\xbf{"id": "a", "text": "x"}\r\n\n{"id": "b", "text": "y"}')  # BOM, CRLF, no last \n
    assert [(d.id_, d.text) for d in load_corpus(path, stream=True)] == [("a", "x"), ("b", "y")]
    path.write_bytes('{"id": "a", "text": "x"}\n'.encode("utf-16"))
    with pytest.raises(InputDataError, match="is UTF-16 encoded"):
        list(load_corpus(path, stream=True))


def test_records_hash_as_their_documents_do_without_building_them(tmp_path, monkeypatch):
    from llama_index_kgplus import _corpus

    rows = [{"id": "a/1", "title": "Café: one", "text": "First.\nSecond - line."}, {"id": "b", "text": " x "},
            {"id": "c", "title": "  ", "text": "no title\u2028here"}]  # fmt: skip
    corpus = write(tmp_path / "docs.jsonl", [json.dumps(r, ensure_ascii=False) for r in rows])
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "note.md").write_text("A note.\n\nAnother paragraph.", encoding="utf-8")
    for path in (corpus, tmp_path / "folder"):
        records, docs = _corpus.load_records(path), load_corpus(path)
        assert [r.doc_id for r in records] == [d.doc_id for d in docs]
        assert [r.hash for r in records] == [d.hash for d in docs]
        assert [r.document().model_dump() for r in records] == [d.model_dump() for d in docs]
    # were LlamaIndex to hash documents otherwise, records would build their documents to hash them
    monkeypatch.setattr(_corpus, "_record_hash", lambda *record: "not how LlamaIndex hashes")
    _corpus._hashes_as_documents_do.cache_clear()
    try:
        assert [r.hash for r in _corpus.load_records(corpus)] == [d.hash for d in load_corpus(corpus)]
    finally:
        _corpus._hashes_as_documents_do.cache_clear()
