"""Text matching shared by the glossary (term spotting) and the KG (entity recognition)."""

from llama_index_kgplus.text._matcher import PhraseMatch, PhraseMatcher

__all__ = ["PhraseMatch", "PhraseMatcher"]
