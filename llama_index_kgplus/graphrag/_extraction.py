"""LLM extraction of entities and relationships from a text chunk, constrained by a JSON schema.

:class:`GraphExtractor` is a LlamaIndex ``TransformComponent``: on nodes it behaves like LlamaIndex's
``SimpleLLMPathExtractor`` (it fills ``KG_NODES_KEY`` / ``KG_RELATIONS_KEY``, so it plugs into a
``PropertyGraphIndex``), and :meth:`GraphExtractor.aextract_text` gives the typed result that the GraphRAG
index merges and stores with each chunk.

Example:

```python
extractor = GraphExtractor.from_defaults(llm=llm, max_entities=8)
result = extractor.extract_text("Guido van Rossum created Python at CWI.")
[e.name for e in result.entities]   # ['Guido van Rossum', 'Python', 'CWI']
```
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from llama_index.core.async_utils import run_jobs
from llama_index.core.graph_stores.types import KG_NODES_KEY, KG_RELATIONS_KEY, EntityNode, Relation
from llama_index.core.llms import LLM
from llama_index.core.schema import BaseNode, MetadataMode, TransformComponent
from pydantic import BaseModel, Field, PrivateAttr, create_model

from llama_index_kgplus._redact import get_logger
from llama_index_kgplus._structured import StructuredOutputError, agenerate_json
from llama_index_kgplus._sync import run_sync
from llama_index_kgplus.graphrag._prompts import EXTRACTION_PROMPT
from llama_index_kgplus.graphrag._schema import bounded_text

logger = get_logger(__name__)

DEFAULT_ENTITY_TYPES = ("person", "organization", "location", "event", "concept", "technology", "work")


class ExtractedEntity(BaseModel):
    """One entity as the LLM names it in one chunk."""

    name: bounded_text(80) = Field(description="The entity's name as written in the text.")  # type: ignore[valid-type]
    type: bounded_text(30) = Field(description="The entity type.")  # type: ignore[valid-type]
    description: bounded_text(300, min_length=0) = Field(description="What the text says about the entity.")  # type: ignore[valid-type]


class ExtractedRelationship(BaseModel):
    """One relationship between two entities of the same chunk."""

    source: bounded_text(80) = Field(description="Name of the source entity.")  # type: ignore[valid-type]
    target: bounded_text(80) = Field(description="Name of the target entity.")  # type: ignore[valid-type]
    type: bounded_text(40) = Field(description="Relationship type, UPPER_SNAKE_CASE.")  # type: ignore[valid-type]
    description: bounded_text(300, min_length=0) = Field(description="How the text relates the two.")  # type: ignore[valid-type]
    strength: int = Field(ge=1, le=10, description="Strength of the relationship, 1 to 10.")


class ExtractionResult(BaseModel):
    """What one chunk yields; both lists may be empty (a chunk that names no entity)."""

    entities: list[ExtractedEntity] = Field(max_length=50)
    relationships: list[ExtractedRelationship] = Field(max_length=50)


@lru_cache(maxsize=32)
def _schema_model(
    min_entities: int, max_entities: int, max_relationships: int, max_description_chars: int
) -> type[ExtractionResult]:
    """A subclass of :class:`ExtractionResult` whose JSON schema carries this extractor's size limits."""
    description = bounded_text(max_description_chars, min_length=0)
    entity = create_model(
        "Entity",
        __base__=ExtractedEntity,
        description=(description, Field(description="What the text says about the entity.")),
    )
    relationship = create_model(
        "Relationship",
        __base__=ExtractedRelationship,
        description=(description, Field(description="How the text relates the two.")),
    )
    return create_model(
        "Extraction",
        __base__=ExtractionResult,
        entities=(list[entity], Field(min_length=min_entities, max_length=max_entities)),  # type: ignore[valid-type]
        relationships=(list[relationship], Field(max_length=max_relationships)),  # type: ignore[valid-type]
    )


class GraphExtractor(TransformComponent):
    """Entities and relationships of a chunk from an LLM, as JSON constrained by a schema (retried and repaired).

    Example:

    ```python
    extractor = GraphExtractor.from_defaults(llm=llm_from_spec("qwen2.5-coder-0.5b"))
    nodes = extractor(nodes)            # fills KG_NODES_KEY / KG_RELATIONS_KEY like SimpleLLMPathExtractor
    result = extractor.extract_text("Ada Lovelace wrote about the Analytical Engine.")
    ```
    """

    entity_types: list[str] = Field(
        default_factory=lambda: list(DEFAULT_ENTITY_TYPES), description="Entity types named in the prompt."
    )
    min_entities: int = Field(
        default=0,
        ge=0,
        le=5,
        description="Fewest entities per chunk (enforced by the schema). Greedy small local models (0.5B) tend to "
        "reply with empty lists; 1 makes them extract, at the price of one made-up entity for a text that names none.",
    )
    max_entities: int = Field(default=10, ge=1, le=50, description="Most entities per chunk (enforced by the schema).")
    max_relationships: int = Field(
        default=10, ge=0, le=50, description="Most relationships per chunk (enforced by the schema)."
    )
    max_description_chars: int = Field(
        default=200, ge=20, le=300, description="Longest entity or relationship description, in characters."
    )
    max_tokens: int = Field(default=1024, ge=64, description="Token limit of one extraction reply.")
    max_attempts: int = Field(
        default=2, ge=1, description="Attempts per chunk (each failure is repaired, then retried with feedback)."
    )
    num_workers: int = Field(default=4, ge=1, description="Concurrent extractions when called on nodes.")
    raise_on_error: bool = Field(default=False, description="Raise instead of logging when a chunk fails (node calls).")

    _llm: LLM | None = PrivateAttr(default=None)

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this component under."""
        return "GraphExtractor"

    @classmethod
    def from_defaults(cls, llm: LLM | None = None, **kwargs: Any) -> GraphExtractor:
        """An extractor bound to ``llm`` (default: ``Settings.llm``)."""
        from llama_index.core import Settings

        extractor = cls(**kwargs)
        extractor._llm = llm or Settings.llm
        return extractor

    def _get_llm(self, llm: LLM | None) -> LLM:
        if llm is not None:
            return llm
        if self._llm is None:
            from llama_index.core import Settings

            self._llm = Settings.llm
        return self._llm

    def config_hash(self) -> str:
        """Changes when the settings or the prompt change (stored extractions are then redone)."""
        config = self.model_dump(exclude={"num_workers", "raise_on_error"})
        config["prompt"] = EXTRACTION_PROMPT.get_template()
        return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]

    def prompt(self, text: str) -> str:
        """The extraction prompt for ``text``."""
        return EXTRACTION_PROMPT.format(
            entity_types=", ".join(self.entity_types),
            max_entities=self.max_entities,
            max_relationships=self.max_relationships,
            text=text.strip(),
        )

    async def aextract_text(self, text: str, *, llm: LLM | None = None) -> ExtractionResult:
        """The entities and relationships of ``text``; raises ``StructuredOutputError`` after all attempts."""
        model = _schema_model(
            min(self.min_entities, self.max_entities),
            self.max_entities,
            self.max_relationships,
            self.max_description_chars,
        )
        result = await agenerate_json(
            self._get_llm(llm),
            self.prompt(text),
            model,
            max_retries=self.max_attempts - 1,
            max_tokens=self.max_tokens,
            repair_truncated=True,
        )
        return ExtractionResult.model_validate(result.model_dump())

    def extract_text(self, text: str, *, llm: LLM | None = None) -> ExtractionResult:
        """Sync twin of :meth:`aextract_text`."""
        return run_sync(self.aextract_text(text, llm=llm))

    # ------------------------------------------------------------------ TransformComponent on nodes

    async def _aextract_node(self, node: BaseNode) -> BaseNode:
        try:
            result = await self.aextract_text(node.get_content(metadata_mode=MetadataMode.NONE))
        except StructuredOutputError:
            if self.raise_on_error:
                raise
            logger.warning("Extraction failed for node %s; it keeps no entities.", node.node_id, exc_info=True)
            result = ExtractionResult(entities=[], relationships=[])
        metadata = {k: v for k, v in node.metadata.items() if k not in (KG_NODES_KEY, KG_RELATIONS_KEY)}
        nodes = list(node.metadata.get(KG_NODES_KEY, []))
        relations = list(node.metadata.get(KG_RELATIONS_KEY, []))
        for entity in result.entities:
            nodes.append(
                EntityNode(
                    name=entity.name,
                    label=entity.type.upper(),
                    properties={**metadata, "description": entity.description, "triplet_source_id": node.node_id},
                )
            )
        for rel in result.relationships:
            relations.append(
                Relation(
                    label=rel.type.upper(),
                    source_id=EntityNode(name=rel.source).id,
                    target_id=EntityNode(name=rel.target).id,
                    properties={
                        **metadata,
                        "description": rel.description,
                        "weight": rel.strength,
                        "triplet_source_id": node.node_id,
                    },
                )
            )
        node.metadata[KG_NODES_KEY] = nodes
        node.metadata[KG_RELATIONS_KEY] = relations
        return node

    async def acall(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> Sequence[BaseNode]:
        """Async ``__call__``: extract the entities and relationships of ``nodes`` into their metadata."""
        jobs = [self._aextract_node(node) for node in nodes]
        return await run_jobs(jobs, workers=self.num_workers, show_progress=show_progress, desc="Extracting entities")

    def __call__(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> Sequence[BaseNode]:
        return run_sync(self.acall(nodes, show_progress=show_progress, **kwargs))
