"""Gap-sentence pairs from the Wikipedia text (PEGASUS's Ind-Orig principal sentence)."""

import pytest

from fairseq_ext.cli.gap_sentences import main
from fairseq_ext.data.gap_sentences import (
    _unigrams,
    gap_sentence_pairs,
    principal_sentence,
    rouge1_f,
    split_sentences,
    windows,
)

CENTRAL = "The river town trades grain and wool along the river with the coast."
WINDOW = [
    "Grain grows on the hills above the river town.",
    CENTRAL,
    "Boats carry wool down the river to the coast.",
    "A bishop lived there once.",
]


def test_sentences_split_after_end_marks_before_capitals_and_digits():
    text = 'It rained. Then it snowed! Did it? "Yes," he said. 1990 was dry. It was e.g. not wet.'
    assert split_sentences(text) == ["It rained.", "Then it snowed!", "Did it?", '"Yes," he said.', "1990 was dry.",
                                     "It was e.g. not wet."]


def test_rouge1_f_by_hand():
    # 2 shared words of 3 and 4: P 2/3, R 2/4, F 4/7
    assert rouge1_f(_unigrams("a b c"), _unigrams("a b d e")) == pytest.approx(4 / 7)
    assert rouge1_f(_unigrams(""), _unigrams("a")) == 0.0


def test_principal_sentence_is_the_one_closest_to_the_rest():
    assert principal_sentence(WINDOW, 1, 100) == 1
    # the central sentence has 13 words: too long for max 12, so the next best wins
    assert principal_sentence(WINDOW, 1, 12) != 1
    assert principal_sentence(WINDOW, 50, 60) is None


def test_windows_keep_sentence_order_and_the_word_limit():
    paragraphs = [" ".join(WINDOW), " ".join(WINDOW)]
    found = list(windows(paragraphs, window_words=20))
    assert [s for w in found for s in w] == WINDOW + WINDOW
    assert all(sum(len(s.split()) for s in w) <= 20 for w in found if len(w) > 1)


@pytest.mark.parametrize("remove", [False, True])
def test_pairs_keep_or_cut_the_target_and_count_the_skipped_windows(remove):
    articles = [[" ".join(WINDOW)], ["Too short. Two sentences."]]
    sources, targets, counts = gap_sentence_pairs(articles, window_words=100, min_words=1, remove=remove)
    assert targets == [CENTRAL]
    assert (CENTRAL in sources[0]) is not remove
    assert sources[0].startswith(WINDOW[0]) and sources[0].endswith(WINDOW[-1])
    assert counts == {"pairs": 1, "windows with fewer than 3 sentences (skipped)": 1}


def test_command_writes_pairs_from_the_shipped_wikipedia_text(tmp_path):
    main(["--out", str(tmp_path / "gsg"), "--limit", "2"])
    for split in ("train", "valid", "test"):
        sources = (tmp_path / "gsg" / f"{split}.source").read_text(encoding="utf-8").splitlines()
        targets = (tmp_path / "gsg" / f"{split}.target").read_text(encoding="utf-8").splitlines()
        assert len(sources) == len(targets) > 0
        assert all(t in s for s, t in zip(sources, targets))
        assert all(8 <= len(t.split()) <= 35 and len(s.split()) <= 170 for s, t in zip(sources, targets))


def test_command_refuses_a_file_as_out(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="is a file"):
        main(["--out", str(tmp_path / "file"), "--limit", "1"])
    with pytest.raises(ValueError, match="its parent .* is a file"):
        main(["--out", str(tmp_path / "file" / "gsg"), "--limit", "1"])


def _normalized_training_text(ids):
    import json

    from fairseq_ext.data.corpora import aclsum_dir

    texts = []
    for paper_id in ids:
        paper = json.loads((aclsum_dir() / "paper_jsons" / f"{paper_id}.json").read_text(encoding="utf-8"))
        parts = [paper.get("abstract") or ""] + [p["text"] for p in paper["pdf_parse"]["body_text"]]
        texts.append(" ".join(" ".join(parts).split()))
    return texts


def test_in_domain_pairs_come_from_the_training_papers_held_out_by_paper(tmp_path):
    from fairseq_ext.data.corpora import read_aclsum_records

    out = tmp_path / "gsg"
    main(["--out", str(out), "--corpus", "aclsum", "--limit", "6", "--valid-papers", "2", "--remove"])
    assert not (out / "test.source").exists()  # no text of ACLSum's test (or validation) papers is read
    ids = [r["id"] for r in read_aclsum_records("train", 6)]
    texts = {"train": _normalized_training_text(ids[:4]), "valid": _normalized_training_text(ids[4:])}
    for split in ("train", "valid"):
        sources = (out / f"{split}.source").read_text(encoding="utf-8").split("\n")[:-1]
        targets = (out / f"{split}.target").read_text(encoding="utf-8").split("\n")[:-1]
        assert len(sources) == len(targets) > 0
        assert all(t not in s for s, t in zip(sources, targets))  # PEGASUS's form: the gap is cut out
        assert all(any(t in text for text in texts[split]) for t in targets)  # from its own papers only
        assert all(8 <= len(t.split()) <= 35 for t in targets)


def test_in_domain_papers_keep_one_pair_a_line_and_count_what_they_skip(tmp_path, monkeypatch):
    import json

    from fairseq_ext.data import gap_sentences

    (tmp_path / "paper_jsons").mkdir()
    body = " ".join(WINDOW)
    papers = {"a": {"abstract": None, "pdf_parse": {"body_text": [{"text": body.replace(" ", "\n", 3)}]}},
              "b": {"abstract": " ", "pdf_parse": {"body_text": [{"text": "\u2028"}]}},
              "c": {"abstract": body.replace("the", "the\u2028", 1), "pdf_parse": {"body_text": []}}}
    for name, paper in papers.items():
        (tmp_path / "paper_jsons" / f"{name}.json").write_text(json.dumps(paper), encoding="utf-8")
    records = [{"id": name} for name in ("a", "missing", "b", "c")]
    monkeypatch.setattr(gap_sentences, "aclsum_dir", lambda: tmp_path)
    monkeypatch.setattr(gap_sentences, "read_aclsum_records", lambda split, limit=None: records[:limit])
    splits, counts = gap_sentences.aclsum_training_papers(valid_papers=1)
    assert counts == {"papers": 2, "papers without a parse (skipped)": 1, "papers without text (skipped)": 1}
    assert splits == {"train": [[body]], "valid": [[body]]}
    with pytest.raises(ValueError, match="--valid-papers 2 must leave at least one on each side"):
        gap_sentences.aclsum_training_papers(valid_papers=2)
