"""Import a knowledge graph from neo4j-admin CSV files into any supported store, in batches.

All files are read and validated before the store is touched, so bad input never leaves half a graph.
Writes are batched per engine: Ladybug loads a normalised temporary CSV with ``COPY FROM``; FalkorDB and Neo4j
get ``UNWIND $rows ... CREATE`` batches (one statement per label set or relationship type and batch). For large
Neo4j graphs the offline importer is faster: :func:`neo4j_admin_import_command` prints the
``neo4j-admin database import full`` command for the same files; after it, ``metadata_only=True`` records the
manifest and synonyms without writing nodes again.

Example::

    report = import_kg("ladybug:///tmp/kg.lbug", "nodes.csv", "relationships.csv", synonyms="synonyms.csv")
    print(report.summary())
"""

from __future__ import annotations

import shlex
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field
from tqdm.auto import tqdm

from llama_index_kgplus.errors import GraphStoreError, InputDataError
from llama_index_kgplus.graph_stores._dialects import GraphLayout, quote_identifier
from llama_index_kgplus.kg._csv import read_kg_csv
from llama_index_kgplus.kg._graph import KGManifest, KnowledgeGraph, manifest_key, rel_table_for
from llama_index_kgplus.kg._matcher import EntityMatcher


class ImportReport(BaseModel):
    """What an import wrote."""

    engine: str = Field(description="ladybug, falkordb or neo4j.")
    import_id: str = Field(description="Id of this import (recorded in the store's manifest).")
    nodes: int = Field(description="Nodes written (or registered, with metadata_only).")
    relationships: int = Field(description="Relationships written.")
    synonyms: int = Field(description="Synonyms stored.")
    skipped_relationships: int = Field(0, description="Relationships skipped because an end id is unknown.")
    skipped_synonyms: int = Field(0, description="Synonyms skipped because their id is unknown.")
    labels: list[str] = Field(default_factory=list, description="Labels found in the :LABEL column.")
    rel_types: list[str] = Field(default_factory=list, description="Relationship types written.")
    dictionary_names: int = Field(0, description="Names and synonyms in the entity dictionary.")
    seconds: float = Field(0.0, description="Wall-clock time of the import.")
    warnings: list[str] = Field(default_factory=list, description="Things worth knowing (skipped rows, ...).")

    def summary(self) -> str:
        text = (
            f"imported {self.nodes} nodes, {self.relationships} relationships "
            f"({', '.join(self.rel_types) or 'no types'}) and {self.synonyms} synonyms into {self.engine} "
            f"in {self.seconds:.1f} s; entity dictionary: {self.dictionary_names} names"
        )
        return "\n".join([text, *(f"warning: {w}" for w in self.warnings)])


def import_kg(
    graph: KnowledgeGraph | str | None,
    nodes: str | Path,
    relationships: str | Path,
    synonyms: str | Path | None = None,
    *,
    node_label: str = "Ent",
    name_column: str | None = None,
    default_type: str | None = None,
    on_unknown_id: Literal["fail", "skip"] = "fail",
    replace: bool = False,
    metadata_only: bool = False,
    batch_size: int = 10_000,
    show_progress: bool = False,
) -> ImportReport:
    """Read, validate and write a knowledge graph; record its manifest and cache its entity dictionary.

    ``graph`` is a :class:`KnowledgeGraph`, a store URI, or ``None`` for the default store. Every node gets
    ``node_label`` besides its ``:LABEL`` labels. An existing graph with that label is an error unless
    ``replace=True`` (which deletes it first). ``metadata_only=True`` expects the nodes and relationships to be
    in the store already (e.g. after ``neo4j-admin database import``) and writes only the synonyms and manifest.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}.")
    quote_identifier(node_label, "node label")
    started = time.perf_counter()
    data = read_kg_csv(
        nodes, relationships, synonyms, name_column=name_column, default_type=default_type,
        on_unknown_id=on_unknown_id,
    )
    kg = graph if isinstance(graph, KnowledgeGraph) else KnowledgeGraph.open(graph, node_label=node_label)
    try:
        if kg.node_label != node_label:
            raise InputDataError(f"node_label {node_label!r} differs from the KnowledgeGraph's {kg.node_label!r}.")
        layout = GraphLayout(
            node_label=node_label,
            id_property=data.id_property,
            name_property=data.name_property,
            rel_types=data.rel_types or (default_type or "RELATED_TO",),
            rel_properties=tuple(data.rel_properties),
            rel_table=rel_table_for(node_label),
        )
        dialect, store = kg.dialect, kg.store
        existing = dialect.count_nodes(store, layout)
        if metadata_only:
            if existing == 0:
                raise GraphStoreError(
                    f"metadata_only: the store has no nodes labelled {node_label!r}; load them first "
                    "(e.g. with the neo4j-admin command) or import without --metadata-only."
                )
        else:
            if (existing or kg.exists()) and not replace:
                raise GraphStoreError(
                    f"The store already holds a graph labelled {node_label!r} ({existing} nodes). Pass --replace "
                    "(replace=True) to delete it and import again, or use another --label."
                )
            dialect.drop_graph(store, layout)  # also clears what a failed import may have left
            dialect.delete_meta(store, manifest_key(node_label))
        kg.refresh()
        written_nodes = written_rels = 0
        if not metadata_only:
            dialect.create_schema(store, layout, data.node_properties, data.rel_properties)
            with tqdm(total=len(data.nodes), desc="nodes", unit="node", disable=not show_progress) as bar:
                written_nodes = dialect.write_nodes(store, layout, data.nodes, data.node_properties, batch_size, bar)
            with tqdm(total=len(data.relationships), desc="relationships", unit="rel", disable=not show_progress) as bar:
                written_rels = dialect.write_relationships(
                    store, layout, data.relationships, data.rel_properties, batch_size, bar
                )
        written_aliases = dialect.write_aliases(store, layout, data.aliases, batch_size)
        import_id = uuid.uuid4().hex
        manifest = KGManifest(
            import_id=import_id,
            created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            node_label=node_label,
            id_property=layout.id_property,
            name_property=layout.name_property,
            rel_types=list(layout.rel_types),
            rel_table=layout.rel_table,
            node_properties=data.node_properties,
            rel_properties=data.rel_properties,
            counts={
                "nodes": len(data.nodes),
                "relationships": len(data.relationships),
                "synonyms": len(data.aliases),
                "skipped_relationships": data.skipped_relationships,
                "skipped_synonyms": data.skipped_aliases,
            },
            sources={k: str(Path(v).resolve()) for k, v in
                     (("nodes", nodes), ("relationships", relationships), ("synonyms", synonyms)) if v is not None},
        )
        dialect.write_meta(store, manifest_key(node_label), manifest.model_dump_json())
        kg.refresh()
        names = [(n.id, n.properties[data.name_property]) for n in data.nodes if n.properties.get(data.name_property)]
        matcher = EntityMatcher.from_pairs(names, data.aliases)
        kg.save_matcher(matcher)
        return ImportReport(
            engine=dialect.engine,
            import_id=import_id,
            nodes=written_nodes if not metadata_only else existing,
            relationships=written_rels,
            synonyms=written_aliases,
            skipped_relationships=data.skipped_relationships,
            skipped_synonyms=data.skipped_aliases,
            labels=list(data.labels),
            rel_types=list(layout.rel_types),
            dictionary_names=len(matcher),
            seconds=time.perf_counter() - started,
            warnings=data.warnings,
        )
    finally:
        if not isinstance(graph, KnowledgeGraph):
            kg.close()


def neo4j_admin_import_command(
    nodes: str | Path,
    relationships: str | Path,
    *,
    database: str = "neo4j",
    node_label: str = "Ent",
    array_delimiter: str = ";",
) -> str:
    """The ``neo4j-admin database import full`` command (Neo4j 5) that loads the same files offline.

    The database must not exist yet (or add ``--overwrite-destination``) and the DBMS must be stopped. Every
    node gets ``node_label`` (``--nodes=<label>=<file>``), as with :func:`import_kg`. Synonyms cannot go through
    neo4j-admin: afterwards, run ``kgplus kg import ... --metadata-only``.
    """
    quote_identifier(node_label, "node label")
    return " ".join(
        [
            "neo4j-admin database import full",
            f"--nodes={shlex.quote(f'{node_label}={Path(nodes).resolve()}')}",
            f"--relationships={shlex.quote(str(Path(relationships).resolve()))}",
            f"--array-delimiter={shlex.quote(array_delimiter)}",
            "--id-type=string",
            shlex.quote(database),
        ]
    )
