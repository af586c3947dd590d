from llama_index_kgplus._text import PhraseMatcher


def spans(matcher, text):
    return [(m.start, m.end, m.text, m.values) for m in matcher.find(text)]


def test_whole_words_case_insensitive_leftmost_longest():
    m = PhraseMatcher.from_pairs([("protein", 1), ("protein kinase", 2), ("kinase C", 3), ("kinase", 4), ("AKT", 5)])
    text = "Protein kinase C binds AKT1 and akt, not proteins."
    assert spans(m, text) == [(0, 14, "Protein kinase", (2,)), (32, 35, "akt", (5,))]


def test_shared_names_keep_all_payloads_and_whitespace_is_normalised():
    m = PhraseMatcher.from_pairs([("cell  cycle", "a"), ("Cell cycle", "b"), ("cell cycle", "a")])
    assert spans(m, "the cell cycle") == [(4, 14, "cell cycle", ("a", "b"))]
    assert m.get("CELL CYCLE") == ("a", "b")
    assert m.get("nothing") == ()


def test_non_word_edges_and_unicode_offsets():
    m = PhraseMatcher.from_pairs([("C++", "cpp"), (">>>", "prompt"), ("straße", "s")])
    text = "İ use C++ at the >>> prompt in the Straße."
    found = spans(m, text)
    assert [f[2] for f in found] == ["C++", ">>>", "Straße"]
    assert all(text[s:e] == t for s, e, t, _ in found)


def test_empty_dictionary_and_blank_keys():
    m = PhraseMatcher.from_pairs([("  ", 1)])
    assert len(m) == 0
    assert m.find("anything") == []


def test_save_and_load_roundtrip(tmp_path):
    m = PhraseMatcher.from_pairs([("aspirin", "C1"), ("headache", "C2")])
    m.save(tmp_path / "dict.json")
    loaded = PhraseMatcher.load(tmp_path / "dict.json")
    assert spans(loaded, "Aspirin for headache") == spans(m, "Aspirin for headache")


def test_tuple_payloads_survive_the_json_file(tmp_path):
    m = PhraseMatcher.from_pairs([("aspirin", ("C1", "aspirin")), ("aspirin", ("C9", "other"))])
    m.save(tmp_path / "dict.json")
    assert PhraseMatcher.load(tmp_path / "dict.json").get("ASPIRIN") == (("C1", "aspirin"), ("C9", "other"))


def test_whitespace_runs_in_the_text_match_like_one_space():
    m = PhraseMatcher.from_pairs([("disease or syndrome", 1), ("cell", 2)])
    text = "Is a disease  or\tsyndrome,\n\n a cell?"
    found = spans(m, text)
    assert [(s, e, t) for s, e, t, _ in found] == [(5, 25, "disease  or\tsyndrome"), (31, 35, "cell")]
    assert all(text[s:e] == t for s, e, t, _ in found)
