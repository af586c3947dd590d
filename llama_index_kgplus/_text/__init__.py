"""Text handling shared by several capabilities: the whole-word phrase matcher (glossary terms, KG entities) and
the sentence splitter (summaries, context compression, judges) and the question splitter (evidence retrieval)."""

from llama_index_kgplus._text._matcher import PhraseMatch, PhraseMatcher, normalize_phrase
from llama_index_kgplus._text._sentences import ends_sentence, questions_in, sentence_splitter, split_sentences

__all__ = [
    "PhraseMatch",
    "PhraseMatcher",
    "ends_sentence",
    "normalize_phrase",
    "questions_in",
    "sentence_splitter",
    "split_sentences",
]
