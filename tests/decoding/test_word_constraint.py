"""``--decode-words source`` (fairseq_ext.decoding.word_constraint): beam search writes only words
of each source (and of ``--decode-words-file``), for WordPiece and sentencepiece dictionaries;
unconstrained decoding of the same models writes other words, so each test can fail."""

import contextlib
import io
import re

import pytest
import torch
from fairseq import options
from fairseq.data import Dictionary
from fairseq.sequence_generator import SequenceGenerator
from fairseq_cli import generate as generate_cli

import user_dir  # noqa: F401  (registers s2s_ft)
from fairseq_ext.compat.generation import fix_decoder_beam_size, fix_ngram_blocking
from fairseq_ext.decoding.ensemble import with_rules
from fairseq_ext.decoding.word_constraint import WordConstraint
from fairseq_ext.decoding.words import LEFT_OUT, WordTrie, split_words, word_starts
from harness import USER_DIR
from s2s_ft_models import small_copy_model
from toys import toy_dictionary


def wordpiece_dictionary():
    """Word starts ``a`` .. ``l``, continuations ``##a`` .. ``##l``, punctuation ``.``, ``[MASK]``."""
    letters = "abcdefghijkl"
    return toy_dictionary(0, *letters, *[f"##{c}" for c in letters], ".", "[MASK]")


def ids(d, text):
    return [d.index(piece) for piece in text.split()]


def test_word_starts_follow_the_symbols_of_each_codec():
    d = wordpiece_dictionary()
    starts = word_starts(d)
    assert starts[: d.nspecial].all()  # specials end words
    assert starts[d.index("a")] and starts[d.index(".")] and not starts[d.index("##a")]
    spm = toy_dictionary(0, "\u2581the", "re", "\u2581cat", ",")
    starts = word_starts(spm)
    assert starts[spm.index("\u2581the")] and starts[spm.index("\u2581cat")]
    assert not starts[spm.index("re")] and not starts[spm.index(",")]
    with pytest.raises(ValueError, match="WordPiece .* or sentencepiece"):
        word_starts(toy_dictionary(5))


def test_split_words_joins_continuations_and_stops_at_specials():
    d = wordpiece_dictionary()
    starts = word_starts(d).tolist()
    skip = set(range(d.nspecial))
    sequence = ids(d, "##c a ##b ##c d .") + [d.eos()] + ids(d, "##e e") + [d.pad()]
    assert split_words(sequence, starts, skip) == [
        tuple(ids(d, "a ##b ##c")), tuple(ids(d, "d")), tuple(ids(d, ".")), tuple(ids(d, "e")),
    ]  # the leading ##c and the ##e after </s> have no start: dropped


def test_trie_gives_what_may_follow_a_prefix():
    trie = WordTrie([(1, 2, 3), (1, 2), (4,), (1, 2)])
    assert len(trie) == 3
    assert trie.firsts() == {1, 4}
    assert trie.after((1,)) == {2} and trie.after((1, 2)) == {3} and trie.after((9,)) == set()
    assert trie.is_word((1, 2)) and not trie.is_word((1,)) and trie.is_word((1, 2, 3))


def test_allowed_tokens_mid_word_and_after_a_whole_word():
    d = wordpiece_dictionary()
    constraint = WordConstraint(d, extra_text=[[tuple(ids(d, "k ##l"))]])
    src = torch.tensor([ids(d, "a ##b ##c a ##b d .") + [d.eos()]])
    constraint.start(src)
    constraint.reorder(torch.tensor([0, 0, 0, 0]))  # four beams of the one sentence
    bos = d.eos()
    tokens = torch.tensor([
        [bos] + ids(d, "d a"),                          # "a" alone is no word of the source
        [bos] + ids(d, "a ##b"),                        # "a ##b" is whole too, "##c" may follow
        [bos] + ids(d, "d k"),                          # "k" only goes on to "k ##l" (the extra word)
        [bos] + ids(d, "d d"),
    ])
    allowed = constraint.allowed(tokens, len(d))
    firsts = {d.index(s) for s in ("a", "d", ".", "k")}

    def names(row):
        return {d[i] for i in allowed[row].nonzero().flatten().tolist()}

    assert names(0) == {"##b"}  # in the middle of "a ##b (##c)": only its continuation
    assert names(1) == {"##c", "</s>"} | {d[i] for i in firsts}
    assert names(2) == {"##l"}
    last = constraint.allowed(tokens, len(d), last=True)  # at the maximum length every row may end
    assert last[:, d.eos()].all() and torch.equal(last[:, d.eos() + 1:], allowed[:, d.eos() + 1:])
    assert names(3) == {"</s>"} | {d[i] for i in firsts}
    # the first step: any word start, or the end
    first = constraint.allowed(torch.tensor([[bos]] * 4), len(d) + 3)  # a model that pads its output
    assert {d[i] for i in first[0].nonzero().flatten().tolist()} == {"</s>"} | {d[i] for i in firsts}
    with pytest.raises(ValueError, match="scores 3 tokens"):
        constraint.allowed(tokens, 3)


def wordpiece_model(d, seed):
    return small_copy_model(d, seed, max_target_positions=16)


def hypothesis_words(constraint, hypotheses, max_len):
    """The words of each best hypothesis; a hypothesis cut at the maximum length loses its last
    word, which only has to begin an allowed word (returned apart)."""
    words, cut = [], []
    for h in hypotheses:
        tokens = h[0]["tokens"].tolist()
        split = constraint.words_of(tokens)
        ends_cut = len(tokens) == max_len + 1 and split
        words.append(set(split[:-1] if ends_cut else split))
        cut.append(split[-1] if ends_cut else ())
    return words, cut


@pytest.mark.parametrize("beam", [1, 3])
def test_beam_search_writes_only_source_and_extra_words(beam):
    d = wordpiece_dictionary()
    model = wordpiece_model(d, seed=3)
    sources = ["a ##b c ##d ##e f .", "g h ##i j ##k b ."]
    src = torch.full((2, 8), d.pad())
    for row, text in enumerate(sources):
        src[row] = torch.tensor(ids(d, text) + [d.eos()])
    sample = {"net_input": {"src_tokens": src, "src_lengths": torch.tensor([8, 8])}}
    extra = [tuple(ids(d, "e ##a"))]
    splitter = WordConstraint(d)
    allowed = [set(splitter.words_of(ids(d, text))) | set(extra) for text in sources]
    max_len = 12

    def decode(constrained):
        generator = SequenceGenerator([model], d, beam_size=beam, max_len_b=max_len, min_len=6)
        generator = fix_decoder_beam_size(generator)
        if constrained:
            generator = with_rules(generator, [WordConstraint(d, [extra])])
        with torch.no_grad():
            return hypothesis_words(splitter, generator.generate([model], sample), max_len)

    free, _ = decode(False)
    assert any(words - allowed[i] for i, words in enumerate(free))  # the model alone writes other words
    words, cut = decode(True)
    for i in range(len(sources)):
        assert words[i] and words[i] <= allowed[i], (sources[i], words[i] - allowed[i])
        assert any(word[: len(cut[i])] == cut[i] for word in allowed[i])


def generate_lines(data, checkpoint, extra):
    argv = [
        str(data), "--user-dir", USER_DIR, "--task", "abstractive_summarization", "--path", str(checkpoint),
        "--gen-subset", "valid", "--beam", "2", "--batch-size", "4", "--min-len", "8", "--max-len-b", "16",
        "--no-progress-bar", "--num-workers", "0", "--max-source-positions", "256", "--max-target-positions", "128",
    ]
    args = options.parse_args_and_arch(options.get_generation_parser(), argv + extra)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        generate_cli.main(args)
    rows = {}
    for line in out.getvalue().splitlines():
        match = re.match(r"^([SH])-(\d+)\t(?:[^\t]*\t)?(.*)$", line)
        if match:
            rows.setdefault(int(match.group(2)), {})[match.group(1)] = match.group(3).split()
    return rows


def spm_words(pieces):
    """Whitespace words of sentencepiece pieces (a word starts at ``\u2581``)."""
    return set("".join(pieces).split("\u2581")) - {""}


def test_generate_command_keeps_to_source_and_file_words(aclsum_bin, bart_tiny_checkpoint, tmp_path):
    """fairseq-generate with ``--decode-words source --decode-words-file``: every written word
    (sentencepiece data) is one of its source's or the file's; without the flags some are not."""
    extra_text = "Gradient descent"
    words_file = tmp_path / "words.txt"
    words_file.write_text(extra_text + "\n\n", encoding="utf-8")
    free = generate_lines(aclsum_bin, bart_tiny_checkpoint, [])
    rows = generate_lines(aclsum_bin, bart_tiny_checkpoint,
                          ["--decode-words", "source", "--decode-words-file", str(words_file)])
    assert rows.keys() == free.keys() and rows
    extra = {"Gradient", "descent"}
    # S- lines are text (the source as the model read it), H- lines sentencepiece pieces
    assert any(spm_words(row["H"]) - set(row["S"]) - extra for row in free.values())
    for row in rows.values():
        assert spm_words(row["H"]) <= set(row["S"]) | extra


def test_missing_words_file_is_named(aclsum_bin, bart_tiny_checkpoint, tmp_path):
    with pytest.raises(FileNotFoundError, match="--decode-words-file .*nowhere.txt"):
        generate_lines(aclsum_bin, bart_tiny_checkpoint,
                       ["--decode-words", "source", "--decode-words-file", str(tmp_path / "nowhere.txt")])


def test_words_file_that_is_not_utf8_is_named(aclsum_bin, bart_tiny_checkpoint, tmp_path):
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("caf\u00e9 words\n".encode("latin-1"))
    with pytest.raises(ValueError, match="--decode-words-file .*latin1.txt: not UTF-8"):
        generate_lines(aclsum_bin, bart_tiny_checkpoint, ["--decode-words", "source", "--decode-words-file", str(bad)])


def test_plain_dictionary_is_refused_clearly():
    with pytest.raises(ValueError, match="neither"):
        WordConstraint(Dictionary())


def test_decoding_may_start_from_a_task_symbol():
    """Transformer-SM starts each hypothesis from ``<delim>``, which sentencepiece's marks would
    read as a continuing piece: the first token is never part of a word."""
    d = toy_dictionary(0, "\u2581the", "re", "\u2581cat", "<delim>")
    constraint = WordConstraint(d)
    constraint.start(torch.tensor([[d.index("\u2581the"), d.index("re"), d.index("\u2581cat"), d.eos()]]))
    delim = d.index("<delim>")
    first = constraint.allowed(torch.tensor([[delim]]), len(d))[0]
    assert {d[i] for i in first.nonzero().flatten().tolist()} == {"\u2581the", "\u2581cat", "</s>"}
    after_the = constraint.allowed(torch.tensor([[delim, d.index("\u2581the")]]), len(d))[0]
    assert {d[i] for i in after_the.nonzero().flatten().tolist()} == {"re"}


def test_beam_search_finishes_when_too_few_words_are_left():
    """One short source, three beams, no repeated 2-grams and a minimum length: blocking takes
    every allowed token from some hypotheses. They go on at the LEFT_OUT cost (with -inf beam
    search could not finish: fairseq's ``assert step < max_len``) and rank below the others."""
    d = wordpiece_dictionary()
    model = wordpiece_model(d, seed=3)
    src = torch.tensor([ids(d, "a ##b .") + [d.eos()]])
    sample = {"net_input": {"src_tokens": src, "src_lengths": torch.tensor([4])}}
    generator = SequenceGenerator([model], d, beam_size=3, max_len_b=10, min_len=6, no_repeat_ngram_size=2)
    generator = with_rules(fix_ngram_blocking(fix_decoder_beam_size(generator)), [WordConstraint(d)])
    with torch.no_grad():
        hypotheses = generator.generate([model], sample)[0]
    assert len(hypotheses) == 3
    scores = [h["score"].item() for h in hypotheses]
    assert scores == sorted(scores, reverse=True)
    assert scores[-1] * (len(hypotheses[-1]["tokens"])) < LEFT_OUT / 2  # the last one paid for a left-out token


def test_bigram_bonus_lifts_the_words_that_follow_in_the_source():
    d = wordpiece_dictionary()
    src = torch.tensor([ids(d, "a ##b c d . c f") + [d.eos()]])
    constraint = WordConstraint(d, extra_text=[[tuple(ids(d, "k")), tuple(ids(d, "g"))]], bigram_bonus=2.5)
    constraint.start(src)
    bos = d.eos()
    tokens = torch.tensor([[bos] + ids(d, words) for words in ("f c", "a ##b", "c a", "c k")])
    constraint.reorder(torch.zeros(4, dtype=torch.long))
    allowed, boosted = constraint.masks(tokens, len(d))
    assert torch.equal(allowed, constraint.allowed(tokens, len(d)))

    def names(mask, row):
        return {d[i] for i in mask[row].nonzero().flatten().tolist()}

    assert names(boosted, 0) == {"d", "f"}  # "c d" and "c f" in the source
    assert names(boosted, 1) == {"c"}
    assert names(boosted, 2) == set()  # in the middle of "a ##b": no bonus
    assert names(boosted, 3) == {"g"}  # "k g" of the extra text
    lprobs = torch.log_softmax(torch.randn(4, len(d)), dim=-1)
    out = constraint.apply(tokens, lprobs.clone())
    assert torch.allclose(out[allowed], (lprobs + 2.5 * boosted.float())[allowed])
    assert (out[~allowed] == LEFT_OUT).all()
    plain = WordConstraint(d)
    plain.start(src)
    assert plain.masks(tokens[:1], len(d))[1] is None  # no bonus: no second mask


def test_hub_takes_decode_words(aclsum_bin, bart_tiny_checkpoint):
    """``from_pretrained(..., decode_words="source")``: the hub's summaries keep to the words of
    each document; the same hub without it writes others."""
    from user_dir import from_pretrained

    documents = ["we parse text with a small model and report parsing accuracy on two corpora .",
                 "the translation system learns phrase tables from parallel data ."]
    path = bart_tiny_checkpoint
    kwargs = dict(beam=2, min_len=6, max_len_b=12)
    free = from_pretrained(str(path.parent), checkpoint_file=path.name, data_name_or_path=str(aclsum_bin))
    assert any(set(s.split()) - set(d.split()) for s, d in zip(free.summarize(documents, **kwargs), documents))
    hub = from_pretrained(str(path.parent), checkpoint_file=path.name, data_name_or_path=str(aclsum_bin),
                          decode_words="source")
    for summary, document in zip(hub.summarize(documents, **kwargs), documents):
        assert summary and set(summary.split()) <= set(document.split())


def test_word_flags_without_decode_words_source_are_reported(aclsum_bin, bart_tiny_checkpoint, tmp_path, caplog):
    words_file = tmp_path / "words.txt"
    words_file.write_text("Gradient descent\n", encoding="utf-8")
    with caplog.at_level("WARNING"):
        rows = generate_lines(aclsum_bin, bart_tiny_checkpoint, ["--decode-words-file", str(words_file)])
    assert rows and "apply only with --decode-words source: ignored" in caplog.text
