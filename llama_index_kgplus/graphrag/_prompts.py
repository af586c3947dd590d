"""The prompts of GraphRAG: extraction, community report, map and reduce (after Microsoft GraphRAG's, shortened
for small local models). Each is a LlamaIndex ``PromptTemplate``; the ``-Section-`` markers keep them readable
and let a scripted test LLM find its input."""

from __future__ import annotations

from llama_index.core.prompts import PromptTemplate

EXTRACTION_PROMPT = PromptTemplate(
    "-Goal-\n"
    "Extract the named entities of the text below and the relationships between them.\n"
    "Entity types: {entity_types}.\n"
    "For each entity give: name (as written in the text), type (one of the entity types), description "
    "(one sentence: what the text says about it).\n"
    "For each relationship between two of the extracted entities give: source and target (entity names), "
    "type (a short verb phrase in UPPER_SNAKE_CASE), description (one sentence: how the text relates them), "
    "strength (1 to 10).\n"
    "Give at most {max_entities} entities and {max_relationships} relationships. If the text names no entity, "
    "reply with empty lists.\n"
    "-Text-\n{text}\n-End of text-"
)

REPORT_PROMPT = PromptTemplate(
    "-Goal-\n"
    "You are an analyst. Write a report about one community of entities from a knowledge graph built from a "
    "document collection. Use only the data below.\n"
    "title: a short title naming the community's key entities.\n"
    "summary: an executive summary of the community: its entities and how they relate.\n"
    "rating: the importance of the community from 0 (none) to 10 (very high).\n"
    "rating_explanation: one sentence explaining the rating.\n"
    "findings: {min_findings} to {max_findings} key insights about the community, each with a one-line "
    "summary and an explanation grounded in the data.\n"
    "-Entities-\n{entities}\n"
    "-Relationships-\n{relationships}\n"
    "-End of data-"
)

MAP_PROMPT = PromptTemplate(
    "-Goal-\n"
    "You help answer a question about a document collection using one report about part of it.\n"
    "-Question-\n{question}\n"
    "-Report-\n{report}\n"
    "-End of report-\n"
    "List the points of the report that help answer the question, at most {max_points}, each with a "
    "description and an importance score from 0 to 100 (100: essential to the answer). If the report does "
    'not help answer the question, reply with one point, description "cannot answer", score 0.'
)

REDUCE_PROMPT = PromptTemplate(
    "-Goal-\n"
    "Answer the question about a document collection by synthesising the key points below, which analysts "
    "took from reports on different parts of the collection. They are sorted by importance, most important "
    "first.\n"
    "-Question-\n{question}\n"
    "-Key points-\n{points}\n"
    "-End of key points-\n"
    "Write the answer as {response_type}. Use only the key points; if they are not enough, say so. Do not "
    "mention the analysts or the importance scores.\n"
    "Answer:"
)

NO_DATA_ANSWER = "I do not know: none of the community reports holds information relevant to the question."
