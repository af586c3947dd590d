"""The workbench's Streamlit pages (Ask, Browse, Compare), run by ``streamlit run`` in the process ``kgplus ui``
starts. Page code only: the logic is in :class:`~llama_index_kgplus.ui.Workbench` and its helpers.

Every text that comes from a document, a graph, an answer or an evaluation file goes through
:func:`~llama_index_kgplus.ui.escape_text` before it reaches ``st.markdown(..., unsafe_allow_html=True)``, or is
shown with an element that renders text only (``st.text``, ``st.code``, ``st.json``, ``st.dataframe``). The
browser chooses among listed items (documents, entities, pipelines, plots), never a path.

Long work (loading the models on the first question, retrieval, the answer's stream) runs under ``st.status``;
Streamlit's Stop button (top right, shown while a run is active) or a new question cancels it: the stream is read
token by token in the script's thread, so a stop ends generation at the next token.
"""

from __future__ import annotations

import os
import time
from typing import Any

import streamlit as st

from llama_index_kgplus.errors import InputDataError
from llama_index_kgplus.ui import Workbench
from llama_index_kgplus.ui._config import CONFIG_ENV
from llama_index_kgplus.ui._eval_folder import EvalFolder
from llama_index_kgplus.ui._evidence import EvidenceItem
from llama_index_kgplus.ui._safety import escape_label, escape_text, highlight_html, safe_path
from llama_index_kgplus.ui._workbench import Answer

#: session-state key of a ready :class:`Workbench` (tests put one there, e.g. with a scripted LLM)
WORKBENCH_KEY = "kgplus_workbench"


def _workbench() -> Workbench:
    bench = st.session_state.get(WORKBENCH_KEY)
    if isinstance(bench, Workbench):
        return bench
    raw = os.environ.get(CONFIG_ENV)
    if not raw:
        st.error(f"${CONFIG_ENV} is not set: start the workbench with `kgplus ui`.")
        st.stop()
    return Workbench.shared(raw)


def _text(text: str, css: str = "") -> None:
    """Untrusted text, escaped, as one HTML block (never read as Markdown or HTML)."""
    style = f' style="{css}"' if css else ""
    st.markdown(f"<div{style}>{escape_text(text)}</div>", unsafe_allow_html=True)


def _note(text: str) -> None:
    _text(text, "color:#555;font-size:0.9em")


# ---------------------------------------------------------------------------------------------------- Ask


def _usage(usage: dict[str, Any] | None) -> None:
    if not usage:
        return
    cols = st.columns(5)
    first = usage.get("first_token_seconds")
    figures = [
        ("LLM calls", usage.get("llm_calls")),
        ("prompt tokens", usage.get("prompt_tokens")),
        ("completion tokens", usage.get("completion_tokens")),
        ("seconds", usage.get("seconds")),
        ("first token (s)", "-" if first is None else first),
    ]
    for col, (label, value) in zip(cols, figures):
        col.metric(label, value if value is not None else "-")
    if usage.get("estimated"):
        st.caption("token counts estimated")


def _evidence(bench: Workbench, item: EvidenceItem, i: int) -> None:
    with st.expander(escape_label(item.title), expanded=False):
        _note("Why this source: " + item.why)
        if item.kind == "passage":
            st.container(key=f"passage-{i}").markdown(
                highlight_html(item.text, item.highlights), unsafe_allow_html=True
            )
            if item.dot:
                st.graphviz_chart(item.dot)
            if item.doc_id and bench.config.index and st.toggle("whole document", key=f"ask-doc-{i}"):
                _text(bench.document_text(item.doc_id), "border-left:3px solid #ccc;padding-left:0.6em")
            if item.children and st.toggle(f"its {len(item.children)} children", key=f"ask-children-{i}"):
                for child_id in item.children:
                    child = bench.node(child_id)
                    if child is not None:
                        level = int(child.metadata.get("level", 0) or 0)
                        _note(f"level {level} · {child.metadata.get('doc_id') or child_id}")
                        _text(child.get_content(), "border-left:3px solid #ccc;padding-left:0.6em")
        elif item.kind == "kg_paths":
            if item.dot:
                st.graphviz_chart(item.dot)
            st.code(item.text, language=None)
        else:
            st.code(item.text, language=None)


def _show_answer(bench: Workbench, answer: Answer) -> None:
    route = f"route **{answer.route or '-'}** → engine **{answer.engine or '-'}**"
    st.markdown(route)
    _note(answer.reason + (f" — note: {answer.fallback}" if answer.fallback else ""))
    _usage(answer.usage)
    if answer.glossary:
        g = answer.glossary
        st.subheader("Glossary rewrite")
        before, after = st.columns(2)
        with before:
            st.caption("before")
            _text(g["before"] or "")
        with after:
            st.caption("after" + (" (refused: the original was used)" if g["refused"] else ""))
            _text(g["proposed"] if g["refused"] and g.get("proposed") else g["after"] or "")
        _note(
            "terms: " + (", ".join(g["terms"]) or "-") + (f"; refused because {g['refused']}" if g["refused"] else "")
        )
    if answer.summary_level is not None:
        _note(f"community level read: {answer.summary_level}")
    st.subheader(f"Evidence ({len(answer.items)})")
    if not answer.items:
        st.caption("no source")
    for i, item in enumerate(answer.items):
        _evidence(bench, item, i)


def _stream(bench: Workbench, question: str, box: Any) -> Answer:
    with bench.answering():  # one answer at a time: the sessions share one local model
        with st.status("Routing, retrieving (the first question also loads the models)…", expanded=False) as status:
            started = time.perf_counter()
            response = bench.query(question)
            meta = response.metadata or {}
            status.update(
                label=f"route {meta.get('route', '?')}, {meta.get('engine', '?')} engine: retrieved in "
                f"{time.perf_counter() - started:.1f} s; answering…",
                state="complete",
            )
        parts: list[str] = []
        last = 0.0
        for token in bench.tokens(response):
            parts.append(token)
            if time.perf_counter() - last > 0.1:
                box.markdown(f'<div class="kgplus-answer">{escape_text("".join(parts))}▌</div>', unsafe_allow_html=True)
                last = time.perf_counter()
        status.update(label=f"route {meta.get('route', '?')}, {meta.get('engine', '?')} engine: answered in "
                      f"{time.perf_counter() - started:.1f} s")  # fmt: skip
        return bench.finish(question, response, "".join(parts))


def ask_page(bench: Workbench) -> None:
    """Ask: a question, the streamed answer, its route, usage and evidence."""
    st.header("Ask")
    if not bench.routes:
        st.info("No source to answer from: start `kgplus ui` with --index, --kg-store, --graphrag or --table.")
        return
    st.caption("answers from: " + ", ".join(bench.routes))
    with st.form("ask-form"):
        question = st.text_input("Question", key="question")
        asked = st.form_submit_button("Ask")
    box = st.container(key="answer").empty()
    if asked and question.strip():
        st.session_state["answer"] = _stream(bench, question.strip(), box)
    answer: Answer | None = st.session_state.get("answer")
    if answer is not None:
        box.markdown(f'<div class="kgplus-answer">{escape_text(answer.text)}</div>', unsafe_allow_html=True)
        _show_answer(bench, answer)


# ---------------------------------------------------------------------------------------------------- Browse


def _browse_documents(bench: Workbench) -> None:
    docs = bench.documents()
    if not docs:
        st.caption("no index given (--index)")
        return
    doc_id = st.selectbox("Document", docs, key="browse-doc")
    if doc_id is None:
        return
    chunks = bench.chunks(doc_id)
    summaries = bench.summaries(doc_id)
    _note(f"{len(chunks)} chunks, {len(summaries)} summary nodes")
    if st.toggle("whole document", key="browse-whole"):
        _text(bench.document_text(doc_id), "border-left:3px solid #ccc;padding-left:0.6em")
    for node in summaries:
        meta = node.metadata
        with st.expander(
            f"summary level {meta['level']} · {meta.get('child_count', '?')} children · {node.node_id[:8]}"
        ):
            _text(node.get_content())
            for child in node.child_nodes or []:
                found = bench.node(child.node_id)
                if found is not None:
                    _note(f"child level {found.metadata.get('level', 0)} · {child.node_id[:8]}")
                    _text(found.get_content()[:400] + ("…" if len(found.get_content()) > 400 else ""))
    for n, chunk in enumerate(chunks, 1):
        with st.expander(f"chunk {n} · {chunk.node_id[:8]}"):
            _text(chunk.get_content())


def _browse_kg(bench: Workbench) -> None:
    if not bench.config.kg_store:
        st.caption("no knowledge graph given (--kg-store)")
        return
    search = st.text_input("Find an entity", key="browse-kg-search")
    entities = bench.kg_entities(search)
    if not entities:
        st.caption("no entity matches")
        return
    names = {cid: name for cid, name in entities}
    cid = st.selectbox("Entity", list(names), format_func=lambda c: f"{names[c]} ({c})", key="browse-kg-entity")
    if cid is None:
        return
    texts, dot = bench.kg_neighbourhood(cid)
    st.graphviz_chart(dot)
    st.code("\n".join(texts) or "(no relationship)", language=None)


def _browse_communities(bench: Workbench) -> None:
    if not bench.config.graphrag:
        st.caption("no GraphRAG store given (--graphrag)")
        return
    search = st.text_input("Search reports and entities", key="browse-communities-search")
    communities = bench.communities(search)
    _note(f"{len(communities)} communities")
    for c in communities[:100]:
        rating = "-" if c["rating"] is None else f"{c['rating']:.1f}"
        with st.expander(f"level {c['level']} · rating {rating} · {escape_label(c['title'])}"):
            _text(c["summary"])
            for finding in c["findings"]:
                _text("• " + finding)
            _note("entities: " + ", ".join(c["entities"]))
            _note("source documents: " + (", ".join(c["documents"]) or "-"))


def browse_page(bench: Workbench) -> None:
    """Browse: documents, chunks and summary trees; KG entities and neighbourhoods; GraphRAG communities."""
    st.header("Browse")
    documents, kg, communities = st.tabs(["Documents", "Knowledge graph", "Communities"])
    with documents:
        _browse_documents(bench)
    with kg:
        _browse_kg(bench)
    with communities:
        _browse_communities(bench)


# ---------------------------------------------------------------------------------------------------- Compare


def _side(side: dict[str, Any]) -> None:
    score = "invalid" if side["score"] is None else f"{side['score']:.3f}"
    st.markdown(f"**{escape_text(side['pipeline'])}** · score {score}", unsafe_allow_html=True)
    _text(side["answer"] or "(no answer)")
    if side["details"]:
        with st.expander("judge's details"):
            st.json(side["details"], expanded=True)


def compare_page(bench: Workbench) -> None:
    """Compare: a ``kgplus eval`` folder's table, plots and per-question answers of two pipelines."""
    st.header("Compare and evaluate")
    if bench.config.eval_dir is None:
        st.caption("no evaluation folder given (--eval DIR)")
        return
    try:
        _compare(bench, EvalFolder(bench.config.eval_dir))
    except InputDataError as exc:  # the folder changed since start-up: its files are checked again here
        st.error(str(exc))


def _compare(bench: Workbench, folder: EvalFolder) -> None:
    st.dataframe(folder.summary(), width="stretch")
    plots = folder.plots()
    if plots:
        with st.expander(f"plots ({len(plots)})"):
            for plot in plots:  # listed by the folder, checked again against the command line's sources
                st.image(str(safe_path(plot, bench.config.allowed_roots())), caption=plot.name)
    if not folder.pipelines:
        return
    left, right, metric_col, order_col = st.columns(4)
    first = left.selectbox("Pipeline A", folder.pipelines, index=0, key="cmp-a")
    second = right.selectbox("Pipeline B", folder.pipelines, index=min(1, len(folder.pipelines) - 1), key="cmp-b")
    metric = metric_col.selectbox("Metric", folder.metrics, key="cmp-metric")
    order = order_col.selectbox("Order", ["worst", "difference", "question"], key="cmp-order")
    if first is None or second is None or metric is None:
        return
    rows = folder.compare(first, second, metric, order=order or "worst")
    st.caption(f"{len(rows)} questions, {order} first")
    for row in rows[:50]:
        st.divider()
        _text(f"{row['sample_id']}: {row['question']}", "font-weight:600")
        a, b = st.columns(2)
        with a:
            _side(row["first"])
        with b:
            _side(row["second"])


def main() -> None:
    """The workbench: one page chosen in the sidebar."""
    st.set_page_config(page_title="kgplus workbench", layout="wide")
    bench = _workbench()
    pages = {"Ask": ask_page, "Browse": browse_page, "Compare": compare_page}
    st.sidebar.title("kgplus workbench")
    page = st.sidebar.radio("Page", list(pages), key="page")
    pages[page or "Ask"](bench)


main()
