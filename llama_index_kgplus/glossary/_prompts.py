"""Prompts of the glossary query engine: the query rewrite, and the glossary block appended for synthesis.

Both are LlamaIndex ``PromptTemplate`` objects, replaceable through ``update_prompts`` on the rewriter
(``"rewrite_prompt"``) and on the engine (``"glossary_context_prompt"``).
"""

from __future__ import annotations

import re

from llama_index.core.prompts import PromptTemplate

DEFAULT_REWRITE_PROMPT_TMPL = (
    "Rewrite a user's question for searching the documentation.\n\n"
    "Relevant glossary entries:\n"
    "{glossary_str}\n\n"
    "Write the rewritten query as one or two questions that:\n"
    "- keep the question form and the intent of the user's question;\n"
    "- use the documentation's terms: name the glossary terms that are relevant to the question "
    "(not the others), so that the search finds the pages about them;\n"
    "- have at most {max_words} words in total.\n"
    "Output only the rewritten query.\n\n"
    "Example (another domain):\n"
    "Question: I want to look at my audio data, which possibilities does Spotlight offer?\n"
    "Rewritten query: Which widgets in Spotlight are suitable for analyzing audio data? What functionalities "
    "does it offer for inspecting and handling audio data points?\n\n"
    "Question: {query_str}\n"
    "Rewritten query:"
)
DEFAULT_REWRITE_PROMPT = PromptTemplate(DEFAULT_REWRITE_PROMPT_TMPL)

DEFAULT_GLOSSARY_CONTEXT_TMPL = (
    "{query_str}\n\n"
    "The following glossary is not part of the question; use it only to understand the domain's terms.\n"
    "Glossary:\n"
    "{glossary_str}"
)
DEFAULT_GLOSSARY_CONTEXT_PROMPT = PromptTemplate(DEFAULT_GLOSSARY_CONTEXT_TMPL)

_REWRITE_LABEL = re.compile(
    r"^[ \t]*(?:rewritten|improved|new) (?:query|question)[ \t]*:", re.IGNORECASE | re.MULTILINE
)
_LABELS = ("rewritten query", "rewritten question", "new query", "improved query", "query", "question", "answer")


def clean_rewrite(text: str) -> str:
    """The first paragraph of an LLM rewrite, without code fences, a leading label or surrounding quotes."""
    text = text.strip().strip("`").strip()
    labelled = list(_REWRITE_LABEL.finditer(text))
    if labelled and text[labelled[-1].end() :].strip():  # "Question: ...\nRewritten query: X" -> X
        text = text[labelled[-1].end() :].strip()
    paragraphs = [p for p in (p.strip() for p in text.split("\n\n")) if p]
    text = paragraphs[0] if paragraphs else ""
    lowered = text.lower()
    for label in _LABELS:
        if lowered.startswith(label) and lowered[len(label) : len(label) + 1] == ":":
            text = text[len(label) + 1 :].strip()
            if not text and len(paragraphs) > 1:  # "Rewritten query:" on its own paragraph
                text = paragraphs[1]
            break
    text = " ".join(text.split())
    quoted = len(text) >= 2 and (text[0], text[-1]) in (('"', '"'), ("“", "”"))
    if quoted and text.count(text[-1]) == 1 + (text[0] == text[-1]):  # no inner quote of the same kind
        text = text[1:-1].strip()
    return text
