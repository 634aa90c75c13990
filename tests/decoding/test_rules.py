"""Word rules of beam search (fairseq_ext.decoding.rules): ``--no-repeat-word`` never
writes a whole word twice in a row, ``--end-at-sentence`` ends at the first sentence end. A
model pushed to repeat itself shows what each rule removes, and a rule broken on purpose fails
the same property, so the tests can fail."""

from argparse import Namespace

import pytest
import torch
from fairseq.sequence_generator import SequenceGenerator

import user_dir  # noqa: F401  (registers s2s_ft)
from fairseq_ext.compat.generation import fix_decoder_beam_size
from fairseq_ext.decoding.ensemble import with_rules
from fairseq_ext.decoding.generator import decoding_rules
from fairseq_ext.decoding.rules import EndAtSentence, NoRepeatWord, StatelessRule
from fairseq_ext.decoding.word_constraint import WordConstraint
from fairseq_ext.decoding.words import split_words, word_starts
from s2s_ft_models import small_copy_model
from toys import toy_dictionary

LETTERS = "abcdef"


def wordpiece_dictionary():
    return toy_dictionary(0, *LETTERS, *[f"##{c}" for c in LETTERS], ".", ",", "3", "[MASK]")


def spm_dictionary():
    return toy_dictionary(0, *[f"\u2581{c}" for c in LETTERS], *LETTERS, "\u2581.", ".", "\u2581,", "\u25813", "[MASK]")


def ids(d, text):
    return [d.index(piece) for piece in text.split()]


def model_of(d, seed):
    return small_copy_model(d, seed, max_target_positions=24)


class Echo(StatelessRule):
    """Pushes every hypothesis to write again what it wrote ``back`` tokens ago (1: the same
    piece, "a a"; 2: the same two pieces, "a ##b a ##b"), and away from ending."""

    def __init__(self, d, back, bonus=8.0):
        self.back, self.bonus, self.eos = back, bonus, d.eos()

    def apply(self, tokens, lprobs, last=False):
        if tokens.size(1) <= self.back:
            return lprobs
        lprobs = lprobs.clone()
        lprobs[:, self.eos] -= self.bonus
        return lprobs.scatter_add(1, tokens[:, -self.back:][:, :1], torch.full_like(lprobs[:, :1], self.bonus))


def repeats(d, tokens):
    """Whole words written twice in a row in one hypothesis."""
    words = split_words(tokens, word_starts(d).tolist(), set(range(d.nspecial)))
    return [w for w, v in zip(words, words[1:]) if w == v]


def decode(d, model, rules, beam=3, max_len=16, min_len=1, words_source=False):
    sources = ["a ##b ##c d e .", "b ##a c f ##e ##d a ##b ."] if d.index("##b") != d.unk() else \
        ["\u2581a b c \u2581d \u2581e \u2581.", "\u2581b a \u2581c \u2581f e d \u2581a b \u2581."]
    src = torch.full((2, 10), d.pad())
    for row, text in enumerate(sources):
        src[row, : len(text.split()) + 1] = torch.tensor(ids(d, text) + [d.eos()])
    sample = {"net_input": {"src_tokens": src, "src_lengths": src.ne(d.pad()).sum(1)}}
    generator = fix_decoder_beam_size(SequenceGenerator([model], d, beam_size=beam, max_len_b=max_len, min_len=min_len))
    generator = with_rules(generator, ([WordConstraint(d)] if words_source else []) + list(rules))
    with torch.no_grad():
        return [h["tokens"].tolist() for hypos in generator.generate([model], sample) for h in hypos]


@pytest.mark.parametrize("dictionary", [wordpiece_dictionary, spm_dictionary])
def test_blocked_tokens_of_one_and_several_piece_words(dictionary):
    d = dictionary()
    wp = d.index("##b") != d.unk()
    a, b, c = (("a", "##b", "##c") if wp else ("\u2581a", "b", "c"))
    e = d.eos()
    cases = [  # (written, the tokens the rule blocks next)
        (f"{a}", {a}),                    # one piece: a may not start the next word
        (f"{a} {b} {c} {a} {b}", {c}),    # a b c, then a b: c may not follow
        (f"{a} {b} {a}", {b, a}),         # a b, then a: b may not follow, nor a start again
        (f"{a} {b} {a} {c}", set()),      # a b, then a c: another word
        (f"{a} {b} {c}", set()),
        (f"{a} {a}", {a}),
        ("", set()),                      # nothing written yet
    ]
    for written, expected in cases:
        mask, blocked = NoRepeatWord(d).blocked(torch.tensor([[e, e] + ids(d, written)]))
        got = {d[i] for i, m in zip(blocked[0].tolist(), mask[0].tolist()) if m}
        assert got == expected, (written, got)


@pytest.mark.parametrize("dictionary", [wordpiece_dictionary, spm_dictionary])
@pytest.mark.parametrize("back", [1, 2])
@pytest.mark.parametrize("words_source", [False, True])
def test_beam_search_never_writes_a_word_twice_in_a_row(dictionary, back, words_source):
    d = dictionary()
    for seed in range(3):
        model = model_of(d, seed)
        free = decode(d, model, [Echo(d, back)], words_source=words_source)
        assert any(repeats(d, h) for h in free)  # the pushed model stutters without the rule
        ruled = decode(d, model, [Echo(d, back), NoRepeatWord(d)], words_source=words_source)
        assert all(not repeats(d, h) for h in ruled), [[d[i] for i in h] for h in ruled if repeats(d, h)]


class OnePieceOnly(NoRepeatWord):
    """Broken on purpose: blocks one-piece repeats only."""

    def blocked(self, tokens):
        mask, ids_ = super().blocked(tokens)
        return mask & torch.tensor([True, False]), ids_


def test_a_rule_broken_on_purpose_fails_the_property():
    d = wordpiece_dictionary()
    stutters = [h for seed in range(3) for h in decode(d, model_of(d, seed), [Echo(d, 2), OnePieceOnly(d)])]
    assert any(repeats(d, h) for h in stutters)


@pytest.mark.parametrize("dictionary", [wordpiece_dictionary, spm_dictionary])
def test_end_at_sentence_ends_after_the_first_full_stop(dictionary):
    d = dictionary()
    stop = d.index(".") if d.index("##b") != d.unk() else d.index("\u2581.")

    class Stops(StatelessRule):  # a model that likes full stops
        def apply(self, tokens, lprobs, last=False):
            return lprobs.index_add(1, torch.tensor([stop]), torch.full_like(lprobs[:, :1], 3.0))

    def middles(hypotheses):
        return [h for h in hypotheses if stop in h[:-2]]

    free = [h for seed in range(3) for h in decode(d, model_of(d, seed), [Echo(d, 1, 2.0), Stops()], min_len=1)]
    assert middles(free)
    ended = [h for seed in range(3) for h in decode(d, model_of(d, seed), [Echo(d, 1, 2.0), Stops(), EndAtSentence(d)],
                                                    min_len=1)]
    assert not middles(ended) and any(h[-2] == stop for h in ended)


def test_end_at_sentence_spares_a_decimal_point_and_offers_only_eos():
    d = wordpiece_dictionary()
    rule = EndAtSentence(d)
    tokens = torch.tensor([[d.eos()] + ids(d, "a ."), [d.eos()] + ids(d, "3 ."), [d.eos()] + ids(d, "a ,")])
    assert rule.ended(tokens).tolist() == [True, False, False]
    lprobs = torch.zeros(3, len(d))
    out = rule.apply(tokens, lprobs)
    assert out[0, d.eos()] == 0 and (out[0].ne(0).sum() == len(d) - 1) and out[1:].eq(0).all()


def test_generation_args_choose_the_rules_over_the_task_flags():
    from user_dir.tasks.s2s_ft import S2SFTSummarizationConfig, S2SFTSummarizationTask

    d = wordpiece_dictionary()
    task = S2SFTSummarizationTask(S2SFTSummarizationConfig(no_repeat_word=True), d, d)
    model = model_of(d, 0)

    def rules(args):
        return [type(r).__name__ for r in getattr(task.build_generator([model], args).model, "rules", [])]

    assert rules(Namespace(beam=2)) == ["NoRepeatWord"]
    assert rules(Namespace(beam=2, no_repeat_word=False)) == []
    assert rules(Namespace(beam=2, end_at_sentence=True)) == ["NoRepeatWord", "EndAtSentence"]
    with pytest.raises(ValueError, match="no_repeat_word must be true or false"):
        rules(Namespace(no_repeat_word="yes"))
    cfg = Namespace(decode_words="source", decode_words_bigram_bonus=0.0, no_repeat_word=True, end_at_sentence=True)
    assert [type(r).__name__ for r in decoding_rules(cfg, d)] == ["WordConstraint", "NoRepeatWord", "EndAtSentence"]
