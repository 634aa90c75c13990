"""``--no-repeat-document-bigrams`` (fairseq_ext.decoding.document_bigrams): a document's lines are
decoded in turn, and a later line never writes a word bigram an earlier one wrote. The rule's
bans against a brute-force reading of the words, the batches and turns, and fairseq-generate
end to end, where the same model without the flag does repeat bigrams (so the test can fail)."""

import contextlib
import io
import re

import numpy as np
import pytest
import torch
from fairseq import options
from fairseq_cli import generate as generate_cli
from hypothesis import given, settings
from hypothesis import strategies as st

import user_dir  # noqa: F401
from fairseq_ext.decoding.document_bigrams import (
    DocumentBigrams,
    decode_in_turns,
    document_batches,
    word_bigrams,
)
from fairseq_ext.decoding.words import LEFT_OUT
from harness import USER_DIR
from toys import toy_dictionary

LETTERS = "abcd"


def wordpiece_dictionary():
    return toy_dictionary(0, *LETTERS, *[f"##{c}" for c in LETTERS])


def test_rule_bans_the_piece_that_would_complete_a_written_bigram():
    d = wordpiece_dictionary()
    rule = DocumentBigrams(d)
    a, b, c, cc = d.index("a"), d.index("b"), d.index("c"), d.index("##c")
    rule.expect([word_bigrams([(a,), (b, cc)]) | word_bigrams([(b,), (c,)])])  # "a bc", "b c"
    rule.start(torch.zeros(1, 3, dtype=torch.long))
    eos = d.eos()
    lprobs = torch.zeros(1, len(d))
    after_a_b = rule.apply(torch.tensor([[eos, a, b]]), lprobs)  # "a b": ##c would finish "a bc", c "b c"
    assert after_a_b[0, cc] == LEFT_OUT and after_a_b[0, c] == LEFT_OUT
    assert (after_a_b[0] == LEFT_OUT).sum() == 2
    after_c_b = rule.apply(torch.tensor([[eos, c, b]]), lprobs)  # "c b": only "b c" applies
    assert after_c_b[0, c] == LEFT_OUT and after_c_b[0, cc] == 0
    rule.start(torch.zeros(1, 3, dtype=torch.long))  # nothing expected: nothing banned
    assert torch.equal(rule.apply(torch.tensor([[eos, a, b]]), lprobs), lprobs)


@settings(max_examples=150, deadline=None)
@given(written=st.lists(st.lists(st.sampled_from(range(8)), min_size=1, max_size=8), min_size=1, max_size=3),
       hypothesis=st.lists(st.sampled_from(range(8)), min_size=0, max_size=8))
def test_bans_are_exactly_the_pieces_that_complete_a_written_bigram(written, hypothesis):
    """Against brute force: a piece is banned iff the hypothesis with it ends in a word bigram
    already written, counting the last word as finished."""
    d = wordpiece_dictionary()
    symbols = [d.index(s) for s in [*LETTERS, *[f"##{c}" for c in LETTERS]]]
    rule = DocumentBigrams(d)
    blocked = set().union(*(word_bigrams(rule.words_of([symbols[i] for i in line])) for line in written))
    rule.expect([blocked])
    rule.start(torch.zeros(1, 1, dtype=torch.long))
    row = [d.eos()] + [symbols[i] for i in hypothesis]
    out = rule.apply(torch.tensor([row]), torch.zeros(1, len(d)))[0]
    for piece in symbols:
        words = rule.words_of(row + [piece])
        completes = len(words) >= 2 and (words[-2], words[-1]) in blocked and words[-1][-1] == piece
        assert (out[piece] == LEFT_OUT) == completes, (row, piece)


def test_rule_follows_beams():
    d = wordpiece_dictionary()
    rule = DocumentBigrams(d)
    a, b = d.index("a"), d.index("b")
    rule.expect([set(), {((a,), (b,))}])
    rule.start(torch.zeros(2, 3, dtype=torch.long))
    rule.reorder(torch.tensor([0, 0, 1, 1]))  # two beams a sentence
    out = rule.apply(torch.tensor([[2, a]] * 4), torch.zeros(4, len(d)))
    assert (out[:2, b] == 0).all() and (out[2:, b] == LEFT_OUT).all()
    with pytest.raises(ValueError, match="2 sets of blocked bigrams for a batch of 3"):
        rule.expect([set(), set()])
        rule.start(torch.zeros(3, 3, dtype=torch.long))


def test_batches_hold_whole_documents_in_turn_order():
    indices = np.array([7, 0, 5, 3, 1, 8, 2, 6, 4])
    assert [b.tolist() for b in document_batches(indices, 3, 8)] == [[0, 1, 2, 3, 4, 5], [6, 7, 8]]
    assert [b.tolist() for b in document_batches(indices, 3, 2)] == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert [b.tolist() for b in document_batches(np.array([4, 0, 2]), 3, None)] == [[0, 2], [4]]


def test_turns_run_in_order_and_carry_the_document_s_bigrams():
    d = wordpiece_dictionary()
    rule = DocumentBigrams(d)
    a, b, c = d.index("a"), d.index("b"), d.index("c")
    outputs = {0: [a, b], 1: [b, c], 2: [a, c], 3: [c, c]}  # ids 0-1 document 0, 2-3 document 1
    seen = []

    def generate(sub, rows):
        seen.append((sub["id"].tolist(), [sorted(s) for s in rule.pending]))
        return [[{"tokens": torch.tensor(outputs[i] + [d.eos()])}] for i in sub["id"].tolist()]

    sample = {"id": torch.tensor([3, 0, 2, 1]), "net_input": {"src_tokens": torch.arange(4)[:, None]}, "nsentences": 4}
    written = {}
    hypos = decode_in_turns(generate, sample, rule, 2, written)
    assert [h[0]["tokens"][:-1].tolist() for h in hypos] == [outputs[i] for i in (3, 0, 2, 1)]
    assert seen[0] == ([0, 2], [[], []])  # turn 0 first, nothing blocked
    assert seen[1] == ([3, 1], [[((a,), (c,))], [((a,), (b,))]])  # turn 1, its document's turn 0
    assert written == {0: {((a,), (b,)), ((b,), (c,))}, 1: {((a,), (c,)), ((c,), (c,))}}

    outputs[0] = [c, a]  # a later batch (an interactive buffer) reusing id 0 starts document 0 afresh
    seen.clear()
    decode_in_turns(generate, {"id": torch.tensor([0, 1])}, rule, 2, written)
    assert seen == [([0], [[]]), ([1], [[((c,), (a,))]])]


def generate_rows(data, checkpoint, extra):
    argv = [
        str(data), "--user-dir", USER_DIR, "--task", "abstractive_summarization", "--path", str(checkpoint),
        "--gen-subset", "valid", "--beam", "3", "--batch-size", "4", "--min-len", "12", "--max-len-b", "16",
        "--no-progress-bar", "--num-workers", "0", "--max-source-positions", "256", "--max-target-positions", "128",
    ]
    args = options.parse_args_and_arch(options.get_generation_parser(), argv + extra)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        generate_cli.main(args)
    rows = {}
    for line in out.getvalue().splitlines():
        match = re.match(r"^H-(\d+)\t[^\t]*\t(.*)$", line)
        if match:
            rows[int(match.group(1))] = match.group(2).split()
    return rows


def spm_bigrams(pieces):
    words = "".join(pieces).split("\u2581")
    words = [w for w in words if w]
    return set(zip(words, words[1:]))


def test_generate_command_never_repeats_a_document_s_bigram(aclsum_bin, bart_tiny_checkpoint):
    """fairseq-generate on 8 sources as 4 documents of 2 lines: with the flag no second line
    shares a word bigram with its first; without it, some do; first lines are unchanged."""
    free = generate_rows(aclsum_bin, bart_tiny_checkpoint, [])
    rows = generate_rows(aclsum_bin, bart_tiny_checkpoint,
                         ["--lines-per-document", "2", "--no-repeat-document-bigrams"])
    assert rows.keys() == free.keys() == set(range(8))
    def shared(r, doc):
        return spm_bigrams(r[2 * doc]) & spm_bigrams(r[2 * doc + 1])

    assert any(shared(free, doc) for doc in range(4))
    for doc in range(4):
        assert not shared(rows, doc), (rows[2 * doc], rows[2 * doc + 1])
        assert rows[2 * doc] == free[2 * doc]  # turn 0 blocks nothing


def test_flag_without_documents_is_refused(aclsum_bin, bart_tiny_checkpoint):
    with pytest.raises(ValueError, match="--lines-per-document N of 2 or more"):
        generate_rows(aclsum_bin, bart_tiny_checkpoint, ["--no-repeat-document-bigrams"])
