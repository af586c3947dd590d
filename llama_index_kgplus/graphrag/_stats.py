"""What a GraphRAG ``build``/``update`` reports, and a community with its stored report."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from llama_index_kgplus.graphrag._communities import Community
from llama_index_kgplus.graphrag._reports import CommunityReport


@dataclass(frozen=True)
class IndexStats:
    """The figures of one ``build``/``update`` (the first eleven are the CLI's ``--json`` contract)."""

    documents: int
    chunks: int
    entities: int
    relationships: int
    communities: int
    reports_total: int
    reports_regenerated: int
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    documents_added: int = 0
    documents_changed: int = 0
    documents_deleted: int = 0
    chunks_extracted: int = 0
    chunks_failed: int = 0
    reports_new: int = 0  # of the regenerated: reports of communities that did not exist before
    reports_reused: int = 0
    reports_failed: int = 0
    resumed: bool = False
    tokens_estimated: bool = False

    CONTRACT = (
        "documents",
        "chunks",
        "entities",
        "relationships",
        "communities",
        "reports_total",
        "reports_regenerated",
        "llm_calls",
        "prompt_tokens",
        "completion_tokens",
        "seconds",
    )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def contract(self) -> dict[str, Any]:
        """Exactly the CLI's ``--json`` keys."""
        data = self.as_dict()
        return {key: data[key] for key in self.CONTRACT}


@dataclass(frozen=True)
class StoredReport:
    """A community with its stored report (``report`` is None when generating it failed: see ``error``)."""

    community: Community
    fingerprint: str
    report: CommunityReport | None
    error: str | None
    context: dict[str, Any]
