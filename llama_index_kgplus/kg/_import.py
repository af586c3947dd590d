"""Import a knowledge graph from neo4j-admin CSV files into any supported store, in batches.

All files are read and validated before the store is touched, so bad input never leaves half a graph.
Writes are batched per engine: Ladybug loads a normalised temporary CSV with ``COPY FROM``; FalkorDB and Neo4j
get ``UNWIND $rows ... CREATE`` batches (one statement per label set or relationship type and batch). For large
Neo4j graphs the offline importer is faster: :func:`neo4j_admin_import_command` prints the
``neo4j-admin database import full`` command for the same files; after it, ``metadata_only=True`` records the
manifest and synonyms without writing nodes again.

The graph is also a LlamaIndex property graph: every node gets the properties LlamaIndex's stores read, ``id``
(the ``:ID`` value), ``name`` (the name column) and ``label`` (its first ``:LABEL`` other than the graph's label),
where the CSV has no such column; on Cypher engines the nodes also carry the labels ``__Entity__`` and
``__Node__``, and on Ladybug the relationship type is in the ``label`` column. So ``store.get_triplets``,
``get``, ``get_schema_str`` and ``PropertyGraphIndex.from_existing(store)`` see the imported graph.

Replacing a graph never loses the old one to a failure or a ``kill -9``: an embedded store is imported into a copy
of its file, renamed over it when whole; on a server the new graph is written under a staging label
(``KGPlusImporting_<label>``) and switched in one transaction (delete the old, relabel the new, write the
manifest).

Example:

```python
report = import_kg("ladybug:///tmp/kg.lbug", "nodes.csv", "relationships.csv", synonyms="synonyms.csv")
print(report.summary())
```
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import shutil
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field
from tqdm.auto import tqdm

from llama_index_kgplus._files import fsync_dir
from llama_index_kgplus._paths import user_path
from llama_index_kgplus.errors import GraphStoreError, InputDataError
from llama_index_kgplus.graph_stores._dialects import GraphLayout, NodeRecord, quote_identifier
from llama_index_kgplus.graph_stores._uri import GraphStoreURI, ladybug_uri
from llama_index_kgplus.kg._csv import KGData, read_kg_csv
from llama_index_kgplus.kg._graph import KGManifest, KnowledgeGraph, default_cache_dir, manifest_key, rel_table_for
from llama_index_kgplus.kg._matcher import EntityMatcher


class ImportReport(BaseModel):
    """What an import wrote.

    Example:

    ```python
    from llama_index_kgplus import import_kg

    report = import_kg("ladybug:///data/umls.lbug", "nodes.csv", "relationships.csv")
    print(report.summary())  # imported 135 nodes, ... into ladybug in 0.4 s; ...
    ```
    """

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
        """One line of counts and timing, then one line per warning."""
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
    ``replace=True`` (the old graph stays until the new one is whole). ``metadata_only=True`` expects the nodes
    and relationships to be in the store already (e.g. after ``neo4j-admin database import``) and writes only the
    synonyms and manifest.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}.")
    quote_identifier(node_label, "node label")
    nodes, relationships = user_path(nodes), user_path(relationships)
    synonyms = None if synonyms is None else user_path(synonyms)
    started = time.perf_counter()
    data = read_kg_csv(
        nodes,
        relationships,
        synonyms,
        name_column=name_column,
        default_type=default_type,
        on_unknown_id=on_unknown_id,
    )
    if not isinstance(graph, KnowledgeGraph):
        from llama_index_kgplus.graph_stores._uri import default_graph_store_uri

        parsed = GraphStoreURI.parse(default_graph_store_uri() if graph is None else graph)  # "" is refused
        if parsed.engine == "ladybug":
            return _import_into_copy(parsed, data, started, node_label=node_label, default_type=default_type,
                                     replace=replace, metadata_only=metadata_only, batch_size=batch_size,
                                     show_progress=show_progress, sources=(nodes, relationships, synonyms))  # fmt: skip
    kg = graph if isinstance(graph, KnowledgeGraph) else KnowledgeGraph.open(graph, node_label=node_label, create=True)
    try:
        return _import_into(kg, data, started, node_label=node_label, default_type=default_type, replace=replace,
                            metadata_only=metadata_only, batch_size=batch_size, show_progress=show_progress,
                            sources=(nodes, relationships, synonyms))  # fmt: skip
    finally:
        if not isinstance(graph, KnowledgeGraph):
            kg.close()


def _import_into_copy(parsed: GraphStoreURI, data: KGData, started: float, **settings: Any) -> ImportReport:
    """Import into a copy of an embedded store and rename it over the original only when the import is whole:
    a failure or ``kill -9`` leaves the store as it was (and no empty file where there was none)."""
    path = parsed.path
    assert path is not None
    node_label = settings["node_label"]
    if path.exists():  # refused now, before any copying, when the graph exists and replace is not given
        with KnowledgeGraph.open(parsed.uri, node_label=node_label) as kg:
            _check_replace(kg, node_label, settings["replace"], settings["metadata_only"])
    path.parent.mkdir(parents=True, exist_ok=True)
    for leftover in path.parent.glob(f".{path.name}.importing-*"):  # of an import killed before it finished
        leftover.unlink(missing_ok=True)
    staged = path.with_name(f".{path.name}.importing-{uuid.uuid4().hex[:8]}")
    try:
        for suffix in ("", ".wal"):
            if Path(f"{path}{suffix}").exists():
                shutil.copy2(f"{path}{suffix}", f"{staged}{suffix}")
        kg = KnowledgeGraph.open(ladybug_uri(staged), node_label=node_label, create=True)
        kg.cache_dir = default_cache_dir(parsed, node_label, {})
        try:
            report = _import_into(kg, data, started, **settings)
        finally:
            kg.close()
        Path(f"{path}.wal").unlink(missing_ok=True)  # the copy holds everything the old log held
        if Path(f"{staged}.wal").exists():
            os.replace(f"{staged}.wal", f"{path}.wal")
        os.replace(staged, path)
        fsync_dir(path.parent)
        return report
    finally:
        for leftover in (staged, Path(f"{staged}.wal")):
            leftover.unlink(missing_ok=True)


def _check_replace(kg: KnowledgeGraph, node_label: str, replace: bool, metadata_only: bool) -> int:
    # counting reads only the label (the node table on Ladybug)
    existing = kg.dialect.count_nodes(kg.store, GraphLayout(node_label=node_label, rel_table=rel_table_for(node_label)))
    if not metadata_only and (existing or kg.exists()) and not replace:
        raise GraphStoreError(
            f"The store already holds a graph labelled {node_label!r} ({existing} nodes). Pass --replace "
            "(replace=True) to delete it and import again, or use another --label."
        )
    return existing


def _staging_layout(layout: GraphLayout) -> GraphLayout:
    """Where a replacing import writes before the switch (one fixed label per graph, so the next import clears
    what a killed one left)."""
    return dataclasses.replace(layout, node_label=f"KGPlusImporting_{layout.node_label}")


def _import_into(
    kg: KnowledgeGraph,
    data: KGData,
    started: float,
    *,
    node_label: str,
    default_type: str | None,
    replace: bool,
    metadata_only: bool,
    batch_size: int,
    show_progress: bool,
    sources: tuple[str | Path, str | Path, str | Path | None],
) -> ImportReport:
    nodes, relationships, synonyms = sources
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
    existing = _check_replace(kg, node_label, replace, metadata_only)
    # Replacing a graph on a server: write the new one under a staging label, then switch in one transaction,
    # so a failure or a kill before the switch leaves the old graph whole.
    staging = _staging_layout(layout) if dialect.can_swap and not metadata_only else None
    staged = staging if existing else None
    target = staged or layout
    if metadata_only and existing == 0:
        raise GraphStoreError(
            f"metadata_only: the store has no nodes labelled {node_label!r}; load them first "
            "(e.g. with the neo4j-admin command) or import without --metadata-only."
        )
    if staging is not None:
        dialect.drop_graph(store, staging)  # what an interrupted import left
    if not metadata_only and staged is None:
        dialect.drop_graph(store, layout)  # also clears what a failed import may have left
        dialect.delete_meta(store, manifest_key(node_label))
    kg.refresh()
    written_nodes = written_rels = 0
    if not metadata_only:
        records, node_properties = _as_llamaindex_entities(data, node_label)
        if staged is not None:  # a node must not carry the live labels before the switch
            records = [dataclasses.replace(n, labels=tuple(lb for lb in n.labels if lb != node_label)) for n in records]
        else:
            records = [dataclasses.replace(n, labels=(*n.labels, *dialect.entity_labels)) for n in records]
        dialect.create_schema(store, target, node_properties, data.rel_properties)
        with tqdm(total=len(records), desc="nodes", unit="node", disable=not show_progress) as bar:
            written_nodes = dialect.write_nodes(store, target, records, node_properties, batch_size, bar)
        with tqdm(total=len(data.relationships), desc="relationships", unit="rel", disable=not show_progress) as bar:
            written_rels = dialect.write_relationships(
                store, target, data.relationships, data.rel_properties, batch_size, bar
            )
    written_aliases = dialect.write_aliases(store, target, data.aliases, batch_size)
    import_id = uuid.uuid4().hex
    manifest = KGManifest(
        import_id=import_id,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        node_label=node_label,
        id_property=layout.id_property,
        name_property=layout.name_property,
        rel_types=list(layout.rel_types),
        rel_table=layout.rel_table,
        type_column=layout.type_column,
        node_properties=data.node_properties,
        rel_properties=data.rel_properties,
        counts={
            "nodes": len(data.nodes),
            "relationships": len(data.relationships),
            "synonyms": len(data.aliases),
            "skipped_relationships": data.skipped_relationships,
            "skipped_synonyms": data.skipped_aliases,
        },
        sources={
            k: str(Path(v).resolve())
            for k, v in (("nodes", nodes), ("relationships", relationships), ("synonyms", synonyms))
            if v is not None
        },
    )
    if staged is not None:
        dialect.swap_graph(store, staged, layout, manifest_key(node_label), manifest.model_dump_json())
    else:
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


def _as_llamaindex_entities(data: KGData, node_label: str) -> tuple[list[NodeRecord], dict[str, str]]:
    """The nodes with the properties LlamaIndex's stores read (``id``, ``name``, ``label``) added where the CSV
    has no such column; returns the records and all node properties with their types."""
    taken = {data.id_property, *data.node_properties}
    added = [p for p in ("id", "name", "label") if p not in taken]
    records = []
    for node in data.nodes:
        standard = {
            "id": node.id,
            "name": node.properties.get(data.name_property),
            "label": next((lb for lb in sorted(node.labels) if lb != node_label), node_label),
        }
        records.append(dataclasses.replace(node, properties={**node.properties, **{p: standard[p] for p in added}}))
    return records, {**data.node_properties, **dict.fromkeys(added, "string")}


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
