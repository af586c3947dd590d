"""Summarizers: extractive (real embedding model), abstractive and two-stage (real 0.5B LLM in the slow tests;
a scripted LLM only where a test needs an exact answer, e.g. an empty one)."""

from __future__ import annotations

import pytest

from llama_index_kgplus._testing import ScriptedLLM
from llama_index_kgplus._text import split_sentences
from llama_index_kgplus.errors import SummarizationError
from llama_index_kgplus.llm import metered
from llama_index_kgplus.llm._complete import repeats_itself
from llama_index_kgplus.summarizers import AbstractiveSummarizer, ExtractiveSummarizer, TwoStageSummarizer
from llama_index_kgplus.summarizers._base import Summarizer

CATS = [
    "Cats are small domesticated carnivores that people keep as pets.",
    "A kitten is a young cat that sleeps most of the day.",
    "Many cats hunt mice and birds near farms.",
]
MARKETS = [
    "The stock market fell sharply after the central bank raised interest rates.",
    "Investors sold bank shares and bought government bonds.",
    "Bond yields rose to their highest level in a decade.",
]


def test_split_sentences_uses_bundled_punkt_and_keeps_abbreviations():
    text = "Dr. Smith lives in the U.S. now. He moved in 2020.\n\nA new paragraph without a full stop"
    assert split_sentences(text) == [
        "Dr. Smith lives in the U.S. now.",
        "He moved in 2020.",
        "A new paragraph without a full stop",
    ]
    assert split_sentences("   \n\n ") == []


def test_extractive_keeps_one_sentence_per_topic_in_original_order(embed_model):
    summarizer = ExtractiveSummarizer(embed_model=embed_model, max_sentences=2, ratio=0.3)
    text = " ".join(CATS[:2] + MARKETS[:1] + CATS[2:] + MARKETS[1:])
    summary = split_sentences(summarizer.summarize([text]))
    assert len(summary) == 2
    assert sum(s in CATS for s in summary) == 1 and sum(s in MARKETS for s in summary) == 1
    order = split_sentences(text)
    assert [order.index(s) for s in summary] == sorted(order.index(s) for s in summary)


async def test_extractive_async_twin_matches_sync(embed_model):
    summarizer = ExtractiveSummarizer(embed_model=embed_model, max_sentences=2)
    texts = [" ".join(CATS), " ".join(MARKETS)]
    assert await summarizer.asummarize(texts) == summarizer.summarize(texts)


def _count_then_refuse_embeddings(monkeypatch, embed_model) -> list[int]:
    """The sizes of the embedding batches asked for; after ``batches.append(None)``, any further one fails."""
    batches: list[int | None] = []
    model = type(embed_model)
    sync, concurrent = model.get_text_embedding_batch, model.aget_text_embedding_batch

    def counted(self, texts, **kwargs):
        assert None not in batches, "embedded again"
        batches.append(len(texts))
        return sync(self, texts, **kwargs)

    async def acounted(self, texts, **kwargs):
        assert None not in batches, "embedded again"
        batches.append(len(texts))
        return await concurrent(self, texts, **kwargs)

    monkeypatch.setattr(model, "get_text_embedding_batch", counted)
    monkeypatch.setattr(model, "aget_text_embedding_batch", acounted)
    return batches


async def test_prefetch_embeds_every_group_in_one_batch_that_the_summaries_then_read(embed_model, monkeypatch):
    groups = [[" ".join(CATS)], [" ".join(MARKETS)], [CATS[0]]]  # the last needs no vector: it is kept whole
    expected = [ExtractiveSummarizer(embed_model=embed_model, max_sentences=1).summarize(g) for g in groups]
    batches = _count_then_refuse_embeddings(monkeypatch, embed_model)
    sync, concurrent = (ExtractiveSummarizer(embed_model=embed_model, max_sentences=1) for _ in range(2))
    sync.prefetch(groups)
    await concurrent.aprefetch(groups)
    assert batches == [6, 6]
    batches.append(None)
    assert [sync.summarize(g) for g in groups] == expected
    assert [await concurrent.asummarize(g) for g in groups] == expected
    two_stage = TwoStageSummarizer.from_defaults(llm=ScriptedLLM(default="A summary."), embed_model=embed_model)
    batches.remove(None)
    await two_stage.aprefetch([[" ".join(CATS), " ".join(MARKETS)]])  # each text as its first stage condenses it
    batches.append(None)
    assert len(two_stage.condense([" ".join(CATS), " ".join(MARKETS)])) == 2


def test_extractive_is_deterministic_and_short_text_is_returned_whole(embed_model):
    text = " ".join(CATS + MARKETS)
    a = ExtractiveSummarizer(embed_model=embed_model, max_sentences=3, random_state=7).summarize([text])
    b = ExtractiveSummarizer(embed_model=embed_model, max_sentences=3, random_state=7).summarize([text])
    assert a == b
    short = ExtractiveSummarizer(embed_model=embed_model, max_sentences=5)
    assert short.summarize([CATS[0]]) == CATS[0]
    assert short.summarize([]) == ""


def test_extractive_identical_sentences_do_not_break_kmeans(embed_model):
    summarizer = ExtractiveSummarizer(embed_model=embed_model)
    summary = summarizer.summarize(["The sky is blue. " * 6])
    assert split_sentences(summary) == ["The sky is blue."]


def test_extractive_uses_default_embed_model_from_builder(embed_model):
    summarizer = ExtractiveSummarizer(max_sentences=1)
    before = summarizer.to_dict()
    summarizer.set_default_embed_model(embed_model)
    assert summarizer.summarize([" ".join(CATS)]) in CATS
    assert summarizer.to_dict() == before  # the cache key does not change with the bound model


def test_extractive_counts_settings_in_cache_key(embed_model):
    a = ExtractiveSummarizer(embed_model=embed_model, max_sentences=2).to_dict()
    b = ExtractiveSummarizer(embed_model=embed_model).to_dict()
    assert a != b and a["embed_model"]["class_name"] == "OnnxMiniLMEmbedding"


def test_abstractive_prompt_is_grounded_and_usage_is_counted():
    llm = ScriptedLLM(default="Summary: Cats are pets and markets fell.", usage=True)
    summarizer = AbstractiveSummarizer(llm=llm, max_words=40)
    assert isinstance(summarizer, Summarizer)
    assert summarizer.summarize([CATS[0], "", MARKETS[0]]) == "Cats are pets and markets fell."
    prompt = llm.prompts[0]
    assert "Use only the given text" in prompt and "at most 40 words" in prompt
    assert f"[1] {CATS[0]}" in prompt and f"[2] {MARKETS[0]}" in prompt
    assert summarizer.usage_ == {
        "calls": 1,
        "prompt_tokens": len(prompt.split()),
        "completion_tokens": len(llm.default.split()),
    }


async def test_abstractive_empty_reply_raises():
    summarizer = AbstractiveSummarizer(llm=ScriptedLLM(default="  <|im_end|> ", usage=True))
    with pytest.raises(SummarizationError, match="empty summary"):
        summarizer.summarize(CATS)
    with pytest.raises(SummarizationError, match="empty summary"):
        await summarizer.asummarize(CATS)
    with pytest.raises(SummarizationError, match="Nothing to summarize"):
        summarizer.summarize(["", "  "])


def test_abstractive_without_llm_says_what_to_do(monkeypatch):
    from llama_index.core import Settings

    monkeypatch.setattr(Settings, "_llm", None)
    import llama_index.core.settings as settings_module

    def no_default(*args, **kwargs):
        raise ImportError("no OpenAI here")

    monkeypatch.setattr(settings_module, "resolve_llm", no_default)
    with pytest.raises(Exception, match="needs an LLM"):
        AbstractiveSummarizer().summarize(CATS)


async def test_a_copied_passage_gets_one_more_call_then_fails():
    copy = MARKETS[1]
    llm = ScriptedLLM(replies=[copy, "Cats are pets, and investors sold bank shares."], usage=True)
    summarizer = AbstractiveSummarizer(llm=llm)
    texts = [CATS[0], MARKETS[1]]
    assert summarizer.copied_passage(copy, texts) == 2
    assert summarizer.copied_passage("Cats are pets, and investors sold bank shares.", texts) is None
    assert summarizer.copied_passage(copy, [copy, " " + copy]) is None  # duplicates say nothing else
    assert summarizer.summarize(texts) == "Cats are pets, and investors sold bank shares."
    retry = llm.prompts[1]
    assert "repeated passage [1] word for word" in retry  # passage 2 is number 1 once reversed
    assert retry.index(MARKETS[1]) < retry.index(CATS[0])
    assert summarizer.usage_["calls"] == 2
    stubborn = AbstractiveSummarizer(llm=ScriptedLLM(default=f"Summary: {copy}", usage=True))
    with pytest.raises(SummarizationError, match="copied passage"):
        await stubborn.asummarize(texts)
    assert stubborn.usage_["calls"] == 2
    once = AbstractiveSummarizer(llm=ScriptedLLM(replies=[copy, "Cats and markets."], usage=True), copy_retry=False)
    with pytest.raises(SummarizationError, match="copied passage"):
        once.summarize(texts)
    assert once.usage_["calls"] == 1
    lenient = AbstractiveSummarizer(llm=ScriptedLLM(default=copy, usage=True), copy_threshold=None)
    assert lenient.summarize(texts) == copy


def test_a_reply_cut_by_the_token_bound_ends_at_its_last_full_sentence():
    from llama_index.core.base.llms.types import CompletionResponse

    summarizer = AbstractiveSummarizer(llm=ScriptedLLM(default="unused"), max_words=20)
    assert summarizer.reply_tokens == 26
    cut = {"choices": [{"finish_reason": "length"}]}
    text = "Cats are pets (see U.K. law). Markets fell. Bond yields rose to"
    assert summarizer._clean(CompletionResponse(text=text, raw=cut)) == "Cats are pets (see U.K. law). Markets fell."
    assert summarizer._clean(CompletionResponse(text="Markets fell because", raw=cut)) == "Markets fell because"
    assert summarizer._clean(CompletionResponse(text=text)) == text  # not cut: kept whole
    curly = "He said \u201cstop.\u201d Then he"
    assert summarizer._clean(CompletionResponse(text=curly, raw=cut)) == "He said \u201cstop.\u201d"
    odd = {"choices": ["not a dict"]}  # a provider's own raw format: left alone
    assert summarizer._clean(CompletionResponse(text=text, raw=odd)) == text
    assert AbstractiveSummarizer(llm=ScriptedLLM(default="unused"), max_words=5).reply_tokens == 8


async def test_a_reply_stops_at_a_sentence_end_after_its_share_of_the_bound(monkeypatch):
    from llama_index_kgplus.summarizers import _abstractive

    asked: list[dict] = []

    def complete(llm, prompt, **bounds):
        asked.append(bounds)
        return llm.complete(prompt)

    async def acomplete(llm, prompt, **bounds):
        return complete(llm, prompt, **bounds)

    monkeypatch.setattr(_abstractive, "complete_response", complete)
    monkeypatch.setattr(_abstractive, "acomplete_response", acomplete)
    summarizer = AbstractiveSummarizer(llm=ScriptedLLM(default="Cats and markets."), max_words=50)
    summarizer.summarize(CATS)
    await summarizer.asummarize(CATS)
    summarizer.sentence_stop = None
    summarizer.summarize(CATS)
    assert asked == [{"max_tokens": 65, "sentence_stop": 39}] * 2 + [{"max_tokens": 65, "sentence_stop": None}]


@pytest.mark.slow
def test_the_sentence_stop_ends_a_real_reply_at_a_sentence_not_at_a_decimal_point(small_llm):
    from llama_index_kgplus._text import ends_sentence
    from llama_index_kgplus.llm._complete import complete_response
    from llama_index_kgplus.llm._llama import SentenceStop, llama_vocabulary

    prompt = "Write eight sentences about the history of Paris."
    full = complete_response(small_llm, prompt, max_tokens=80)
    stopped = complete_response(small_llm, prompt, max_tokens=80, sentence_stop=20)
    assert full.raw["choices"][0]["finish_reason"] == "length"
    assert stopped.raw["choices"][0]["finish_reason"] == "stop"
    assert 20 < stopped.raw["usage"]["completion_tokens"] < 80
    assert ends_sentence(stopped.text) and len(stopped.text.split()) >= 12
    # its first sentence is still running at a bound of 22 tokens: llama.cpp gets room for it to end (up to 33).
    # Not compared with `stopped` token for token: llama.cpp reuses the cached prompt, and a near-tie between two
    # tokens (". " or ")") can then go either way, so the reply may end its sentence later or run to the room's end
    running_on = complete_response(small_llm, prompt, max_tokens=22, sentence_stop=11)
    assert 22 < running_on.raw["usage"]["completion_tokens"] <= 33
    assert running_on.raw["choices"][0]["finish_reason"] == "length" or ends_sentence(running_on.text)

    model = llama_vocabulary(small_llm)  # the criterion step by step, with the model's own tokens
    text = "Prices rose by 2.5 percent, said Dr. Lee. Then they fell."
    reply = model.tokenize(f"{text} Again".encode(), add_bos=False)
    first_end, both = "Prices rose by 2.5 percent, said Dr. Lee.", text

    def first_stop(stop: SentenceStop, reply: list[int] = reply) -> int:  # 3 prompt tokens, then the reply
        return next(n for n in range(len(reply) + 1) if stop([0] * 3 + reply[:n], None))  # token by token

    stop = SentenceStop(model, min_tokens=2)
    first = first_stop(stop)
    assert model.detokenize(reply[first - 1 : first]).decode() == " Then"  # not after "2." nor "Dr."
    assert stop.text == first_end
    # the bound: the reply stops at its last sentence end, and a sentence that ends on the bound's own token
    # (seen one token later) is kept
    length = len(model.tokenize(text.encode(), add_bos=False))
    bounded = SentenceStop(model, min_tokens=100, max_tokens=length - 1)
    assert first_stop(bounded) == length and bounded.text == first_end
    on_bound = SentenceStop(model, min_tokens=100, max_tokens=length)
    assert first_stop(on_bound) == length + 1 and on_bound.text == both
    # a first sentence still running at the bound goes on to its end
    running = SentenceStop(model, min_tokens=100, max_tokens=3)
    assert first_stop(running) == first and running.text == first_end
    # "." and a paragraph break are one token (".\n\n"), and the next sentence's first token has no space
    paragraphs = model.tokenize(b"It rose.\n\nThen it fell. Again", add_bos=False)
    assert model.detokenize(paragraphs[2:3]) == b".\n\n"
    broken = SentenceStop(model, min_tokens=1)
    assert first_stop(broken, paragraphs) == 4 and broken.text == "It rose."


def test_two_stage_condenses_each_text_before_the_llm(embed_model):
    llm = ScriptedLLM(default="A summary.", usage=True)
    summarizer = TwoStageSummarizer.from_defaults(llm=llm, embed_model=embed_model, max_sentences=1)
    texts = [" ".join(CATS), " ".join(MARKETS)]
    assert summarizer.summarize(texts) == "A summary."
    prompt = llm.prompts[0]
    kept = [s for s in CATS + MARKETS if s in prompt]
    assert len(kept) == 2 and any(s in CATS for s in kept) and any(s in MARKETS for s in kept)
    assert summarizer.usage_["calls"] == 1
    assert summarizer.to_dict()["abstractive"]["llm"]["model_name"] == "scripted"


async def test_two_stage_cuts_the_longest_passages_to_one_sentence_to_fit_the_word_bound(embed_model):
    texts = [  # 4 sentences each: the extractive stage keeps 2 (30%, rounded up)
        " ".join(CATS + ["Cats that live on farms are often fed by the farmer's family every evening."]),
        " ".join(MARKETS + ["Banks raised their lending rates the next morning."]),
    ]
    roomy = TwoStageSummarizer.from_defaults(llm=ScriptedLLM(default="unused"), embed_model=embed_model)
    full = roomy.condense(texts)
    assert all(len(split_sentences(c)) == 2 for c in full)  # 2 central sentences each, within 250 words
    bound = sum(len(c.split()) for c in full) - 1  # one word too many: the longest passage is cut
    tight = TwoStageSummarizer.from_defaults(llm=ScriptedLLM(default="unused"), embed_model=embed_model)
    tight.max_passage_words = bound
    cut = tight.condense(texts)
    longest = max(range(2), key=lambda i: len(full[i].split()))
    assert len(split_sentences(cut[longest])) == 1 and cut[longest] in texts[longest]
    assert cut[1 - longest] == full[1 - longest]
    assert await tight.acondense(texts) == cut
    assert tight._one_sentence()._cache is tight.extractive._cache  # the cut embeds no sentence again
    tight.max_passage_words = 1  # cannot fit: every passage keeps its one most central sentence
    assert [len(split_sentences(c)) for c in tight.condense(texts)] == [1, 1]
    tight.max_passage_words = None
    assert tight.condense(texts) == full


async def test_two_stage_falls_back_to_the_extractive_summary_when_the_llm_keeps_copying(embed_model):
    texts = [" ".join(CATS), " ".join(MARKETS)]
    stubborn = ScriptedLLM(default=MARKETS[1], usage=True)  # copies condensed passage 2 every time
    summarizer = TwoStageSummarizer.from_defaults(llm=stubborn, embed_model=embed_model)
    expected = summarizer.extractive.summarize(texts)
    assert summarizer.summarize(texts) == expected
    assert await summarizer.asummarize(texts) == expected
    assert summarizer.usage_["calls"] == 2 and summarizer.usage_["extractive_fallbacks"] == 2  # no retry
    strict = TwoStageSummarizer.from_defaults(llm=stubborn, embed_model=embed_model)
    strict.extractive_fallback = False
    with pytest.raises(SummarizationError, match="copied passage"):
        strict.summarize(texts)
    assert strict.to_dict()["extractive_fallback"] is False


def test_two_stage_rejects_a_stage_that_is_not_a_summarizer():
    with pytest.raises(ValueError, match="not a Summarizer"):
        TwoStageSummarizer(extractive=object(), abstractive=object())


@pytest.mark.slow
def test_two_stage_with_the_real_local_llm_writes_a_grounded_summary(small_llm, embed_model):
    summarizer = TwoStageSummarizer.from_defaults(llm=small_llm, embed_model=embed_model, max_sentences=2, max_words=30)
    texts = [" ".join(CATS), "Lions and tigers are large wild cats that hunt antelope. A cheetah is the fastest cat."]
    summary = summarizer.summarize(texts)
    assert summary.strip()
    words = {w.strip(".,").lower() for w in summary.split()}
    assert {"cat", "cats", "kitten", "kittens", "lions", "tigers", "cheetah"} & words
    if summarizer.usage_["extractive_fallbacks"]:  # the LLM copied a passage: the extractive summary instead
        assert summary == summarizer.extractive.summarize(texts)
    else:  # the LLM's own summary: not a copy
        assert summarizer.abstractive.copied_passage(summary, summarizer.condense(texts)) is None
    assert summarizer.usage_["calls"] == 1  # a copy is not retried
    assert summarizer.usage_["prompt_tokens"] > 50
    # 30 words asked for: the reply is bounded at 39 tokens whatever the model would write (58 for a first
    # sentence that is still running at 39)
    assert summarizer.usage_["completion_tokens"] <= summarizer.usage_["calls"] * 58


def test_a_copy_by_an_llm_that_may_answer_otherwise_can_be_retried():
    scripted = AbstractiveSummarizer(llm=ScriptedLLM(default=MARKETS[0]), copy_retry=False)
    with pytest.raises(SummarizationError, match="copied passage") as caught:
        scripted.summarize([MARKETS[0], CATS[0]])
    assert caught.value.retryable  # not a llama.cpp model: asking again may give another reply
    with pytest.raises(SummarizationError, match="Nothing to summarize") as caught:
        scripted.summarize([" "])
    assert not caught.value.retryable


@pytest.mark.slow
def test_a_copy_by_a_greedy_local_llm_is_not_for_a_builder_to_retry(small_llm, monkeypatch):
    template = "Repeat passage [1] word for word.\n\n{context_str}\n\nPassage [1]:"
    copier = AbstractiveSummarizer(llm=small_llm, prompt_template=template, copy_retry=False, max_tokens=48)
    with pytest.raises(SummarizationError, match="copied passage") as caught:
        copier.summarize([MARKETS[0], CATS[0]])
    assert caught.value.retryable is False  # llama.cpp at temperature 0 would write the same copy again
    assert copier.usage_["calls"] == 1
    assert repeats_itself(small_llm) and repeats_itself(metered(small_llm))
    monkeypatch.setattr(small_llm, "temperature", 0.7)  # sampling: another call may answer otherwise
    assert not repeats_itself(small_llm)


@pytest.mark.slow
async def test_abstractive_async_with_the_real_local_llm(small_llm):
    summarizer = AbstractiveSummarizer(llm=small_llm, max_words=25, max_tokens=24)
    summary = await summarizer.asummarize(MARKETS)
    assert summary.strip()
    # bounded at 24 tokens, or 36 for a first sentence that is still running at 24
    assert 0 < summarizer.usage_["completion_tokens"] <= summarizer.usage_["calls"] * 36
    assert {"market", "bank", "bonds", "bond", "yields", "investors", "rates", "shares"} & {
        w.strip(".,").lower() for w in summary.split()
    }


@pytest.mark.model  # loads the 0.5B model's vocabulary only (well under a second each)
def test_llama_cpp_loads_in_threads_at_once_leave_the_output_streams_as_they_were():
    import sys
    import threading
    from types import SimpleNamespace

    from llama_index_kgplus import _defaults
    from llama_index_kgplus.llm import _llama

    stdout, stderr = sys.stdout, sys.stderr
    model = SimpleNamespace(model_path=str(_defaults.gguf_path(_defaults.FAST_LLM)))

    def load_when_all_are_ready(start: threading.Barrier) -> None:
        start.wait()
        _llama.llama_vocabulary(model)

    for _ in range(3):  # llama.cpp swaps the streams for /dev/null while it loads: unlocked, the swaps interleave
        _llama._vocabulary.cache_clear()
        start = threading.Barrier(4)
        workers = [threading.Thread(target=load_when_all_are_ready, args=(start,)) for _ in range(4)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert (sys.stdout, sys.stderr) == (stdout, stderr)
