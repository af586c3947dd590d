"""The read-only guard of generated Cypher: what passes (with its row limit) and what never runs."""

from __future__ import annotations

import pytest

from llama_index_kgplus.errors import UnsafeQueryError
from llama_index_kgplus.kg._cypher_guard import read_only_cypher


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("MATCH (n:Ent) RETURN n.name", "MATCH (n:Ent) RETURN n.name LIMIT 100"),
        ("MATCH (n) RETURN n LIMIT 5000", "MATCH (n) RETURN n LIMIT 100"),
        ("MATCH (n) RETURN n LIMIT 3;", "MATCH (n) RETURN n LIMIT 3"),
        (
            "MATCH (n) WHERE n.name = 'CREATE x; DROP y' RETURN n",
            "MATCH (n) WHERE n.name = 'CREATE x; DROP y' RETURN n LIMIT 100",
        ),
        ("MATCH (n) RETURN n.set, n.delete", "MATCH (n) RETURN n.set, n.delete LIMIT 100"),
        ("OPTIONAL MATCH (n) RETURN n // DELETE it", "OPTIONAL MATCH (n) RETURN n LIMIT 100"),
        ("UNWIND [1, 2] AS x RETURN x", "UNWIND [1, 2] AS x RETURN x LIMIT 100"),
        ("MATCH (a)-[r:`CREATE`]->(b) RETURN count(r)", "MATCH (a)-[r:`CREATE`]->(b) RETURN count(r) LIMIT 100"),
        (
            "MATCH (a)-->(b) WHERE b.`id` <> a.`id` RETURN b",
            "MATCH (a)-->(b) WHERE b.`id` <> a.`id` RETURN b LIMIT 100",
        ),
    ],
)
def test_reads_pass_with_a_row_limit(query, expected):
    assert read_only_cypher(query, max_rows=100) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (
            "MATCH (a) RETURN a.x AS x UNION MATCH (b) RETURN b.x AS x",
            "MATCH (a) RETURN a.x AS x LIMIT 5 UNION MATCH (b) RETURN b.x AS x LIMIT 5",
        ),
        (
            "MATCH (a) RETURN a.x AS x LIMIT 3 union all MATCH (b) RETURN b.x AS x LIMIT 900;",
            "MATCH (a) RETURN a.x AS x LIMIT 3 union all MATCH (b) RETURN b.x AS x LIMIT 5",
        ),
        (
            "MATCH (a) RETURN a.x AS x UNION MATCH (b) RETURN b.x AS x UNION ALL MATCH (c) RETURN c.x AS x",
            "MATCH (a) RETURN a.x AS x LIMIT 5 UNION MATCH (b) RETURN b.x AS x LIMIT 5 UNION ALL "
            "MATCH (c) RETURN c.x AS x LIMIT 5",
        ),
        (  # a UNION in a string, a name, a property or a comment is not a clause
            "MATCH (a) WHERE a.name = 'x UNION y' RETURN a.union AS `union` // UNION ALL",
            "MATCH (a) WHERE a.name = 'x UNION y' RETURN a.union AS `union` LIMIT 5",
        ),
        (  # nor one inside a subquery's braces
            "MATCH (a) WHERE EXISTS { MATCH (a)-->(b) RETURN b UNION MATCH (a)<--(b) RETURN b } RETURN a",
            "MATCH (a) WHERE EXISTS { MATCH (a)-->(b) RETURN b UNION MATCH (a)<--(b) RETURN b } RETURN a LIMIT 5",
        ),
    ],
)
def test_every_branch_of_a_union_gets_the_row_limit(query, expected):
    assert read_only_cypher(query, max_rows=5) == expected


@pytest.mark.parametrize(
    "query",
    [
        "MATCH (n) DETACH DELETE n",
        "MATCH (n) WHERE n.name = 'x' } DETACH DELETE n //",
        "MATCH (n) SET n.x = 1 RETURN n",
        "MATCH (n) WHERE n.`flag` SET n.x = 1 RETURN n",  # a quoted property name must not hide the next word
        "MATCH (n) WHERE n.name = 'a' DETACH DELETE n RETURN 1",
        "MATCH (n) REMOVE n.name RETURN n",
        "CREATE (n:Ent) RETURN n",
        "MERGE (n:Ent {name: 'a'}) RETURN n",
        "MATCH (n) RETURN n; MATCH (m) DELETE m",
        "MATCH (n) RETURN n /* ; */ ; DROP TABLE Ent",
        "LOAD CSV FROM 'file:///etc/passwd' AS line RETURN line",
        "CALL db.labels()",
        "MATCH (n) CALL { MATCH (m) DELETE m } RETURN n",
        "MATCH (n) FOREACH (x IN [1] | SET n.a = x) RETURN n",
        "COPY Ent FROM '/tmp/x.csv'",
        "INSTALL httpfs",
        "MATCH (n) RETURN n.name = 'unterminated",
        "RETURN 1",
        "MATCH (n)",
        "",
    ],
)
def test_writes_files_procedures_and_broken_queries_never_run(query):
    with pytest.raises(UnsafeQueryError, match="not run"):
        read_only_cypher(query, max_rows=100)
