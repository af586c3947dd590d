"""Deprecated: the phrase matcher and the sentence splitter moved to a private module; this module only keeps the old
names importable, with a DeprecationWarning, until the next release."""

from llama_index_kgplus._deprecation import deprecated_names

__all__: list[str] = []

__getattr__ = deprecated_names(
    __name__,
    {
        "ends_sentence": "llama_index_kgplus._text:ends_sentence",
        "normalize_phrase": "llama_index_kgplus._text:normalize_phrase",
        "PhraseMatch": "llama_index_kgplus._text:PhraseMatch",
        "PhraseMatcher": "llama_index_kgplus._text:PhraseMatcher",
        "questions_in": "llama_index_kgplus._text:questions_in",
        "split_sentences": "llama_index_kgplus._text:split_sentences",
    },
)
