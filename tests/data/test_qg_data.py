"""Question generation data: SQuAD JSON -> ``answer [SEP] passage`` / question pairs, with the
repairs counted, the splits formed from the files given, passage windows around the answer's
sentence, and ``[SEP]`` kept as one symbol by sentencepiece and WordPiece."""

import json

import pytest
import sentencepiece
from fairseq.data import Dictionary, data_utils

from fairseq_ext.data import DataError, PrepareConfig, Report, prepare
from fairseq_ext.data.prepare_wordpiece import prepare_wordpiece
from fairseq_ext.data.squad import (
    SEPARATOR,
    SquadSource,
    load_squad,
    passage_window,
    squad_examples,
)
from fairseq_ext.data.squad_sample import DEV_ARTICLES, TEST_TITLES, TRAIN_ARTICLES, squad_json, write_sample
from preprocess import prepare as prepare_cli
from toys import bad_squad

PARAGRAPH = TRAIN_ARTICLES[0][1][0][0]  # the first lighthouse paragraph


def write_json(path, obj):
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


# ------------------------------------------------------------------- reading and repairs


def test_sample_answers_point_at_their_text():
    for articles in (TRAIN_ARTICLES, DEV_ARTICLES):
        for article in squad_json(articles)["data"]:
            for paragraph in article["paragraphs"]:
                for qa in paragraph["qas"]:
                    answer = qa["answers"][0]
                    start = answer["answer_start"]
                    assert paragraph["context"][start:start + len(answer["text"])] == answer["text"]


def test_examples_are_answer_sep_passage_and_the_question():
    report = Report()
    sources, targets = squad_examples(squad_json(TRAIN_ARTICLES[:1])["data"], "x.json", report)
    assert sources[0] == f"a navigational aid {SEPARATOR} {' '.join(PARAGRAPH.split())}"
    assert targets[0] == "What does a lighthouse serve as for ships at sea?"
    assert report.documents_in == len(sources) == 8 and not report.counts


def test_every_bad_entry_is_counted_with_its_location():
    report = Report()
    sources, targets = squad_examples(bad_squad()["data"], "bad.json", report)
    good = sum(len(qs) for _, ps in TRAIN_ARTICLES for _, qs in ps)
    assert len(sources) == len(targets) == good + 1  # the wrong offset is repaired, kept
    assert sources[-1].startswith(f"ten countries {SEPARATOR} The river Danube")
    assert dict(report.counts) == {"answer_offset": 1, "empty_question": 1, "missing_field": 4,
                                   "no_answer": 1, "answer_not_found": 1}
    assert report.documents_in == good + 7
    where = report.locations
    assert where["answer_offset"] == ["bad.json:data[6].paragraphs[0].qas[0]: answer_start 3 -> 31"]
    assert where["empty_question"][0].startswith("bad.json:data[6].paragraphs[0].qas[1]")
    assert any("paragraphs[1].qas[0]: its paragraph has no 'context'" in w for w in where["missing_field"])
    assert any("paragraphs[2]: paragraph without a 'qas' list" in w for w in where["missing_field"])
    assert any("qas[5]: answer without" in w for w in where["missing_field"])
    assert "'the Rhine' is not in the passage" in where["answer_not_found"][0]


def test_strict_turns_a_bad_entry_into_an_error_naming_it():
    with pytest.raises(DataError, match=r"bad.json:data\[6\].paragraphs\[0\].qas\[0\]: answer_start 3 -> 31"):
        squad_examples(bad_squad()["data"], "bad.json", Report(), strict=True)


def test_not_json_and_not_squad_are_errors_naming_the_file(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text('{"data": [', encoding="utf-8")
    with pytest.raises(DataError, match=r"broken.json: not valid JSON \(line 1"):
        load_squad(SquadSource(broken))
    other = write_json(tmp_path / "other.json", {"articles": []})
    with pytest.raises(DataError, match="other.json: not a SQuAD file"):
        load_squad(SquadSource(other))
    with pytest.raises(FileNotFoundError, match="missing SQuAD file"):
        load_squad(SquadSource(tmp_path / "absent.json"))


def test_invalid_utf8_in_the_json_is_replaced_and_counted(tmp_path):
    corpus = squad_json(TRAIN_ARTICLES)
    text = json.dumps(corpus, indent=1).replace("What does a lighthouse", "What does a lighthouse CAFE")
    path = tmp_path / "latin1.json"
    path.write_bytes(text.encode("utf-8").replace(b"CAFE", b"caf\xe9"))
    splits = load_squad(SquadSource(path, heldout_articles=1))
    assert splits["train"].report.counts["invalid_utf8"] == 1
    assert any("caf\ufffd" in t for t in splits["train"].targets)
    with pytest.raises(DataError, match="latin1.json:.*invalid UTF-8"):
        load_squad(SquadSource(path, heldout_articles=1), strict=True)


# ------------------------------------------------------------------- splits


def test_du_et_al_layout_train_minus_titles_dev_file(tmp_path):
    paths = write_sample(tmp_path)
    splits = load_squad(SquadSource(paths["train"], {"valid": paths["dev"]}, {"test": paths["doclist_test"]}))
    count = {name: sum(len(qs) for t, ps in arts for _, qs in ps if keep(t))
             for name, arts, keep in (("train", TRAIN_ARTICLES, lambda t: t not in TEST_TITLES),
                                      ("test", TRAIN_ARTICLES, lambda t: t in TEST_TITLES),
                                      ("valid", DEV_ARTICLES, lambda t: True))}
    assert {name: len(s.sources) for name, s in splits.items()} == count
    assert all("Fleming" not in s for s in splits["train"].sources)
    assert any("Fleming" in s for s in splits["test"].sources)


def test_titles_match_url_encoded_and_missing_titles_are_errors(tmp_path):
    corpus = squad_json(TRAIN_ARTICLES)
    corpus["data"][0]["title"] = "Financial_crisis_of_2007%E2%80%9308"
    train = write_json(tmp_path / "train.json", corpus)
    titles = tmp_path / "titles.txt"
    titles.write_text("Financial_crisis_of_2007\u201308\nVolcano\n", encoding="utf-8")
    splits = load_squad(SquadSource(train, split_titles={"test": titles}, heldout_articles=1))
    assert sum("Pharos" in s or "Fresnel" in s for s in splits["test"].sources) == 8
    titles.write_text("Volcano\nAtlantis\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"titles.txt: 1 listed titles are not articles of .*'Atlantis' \(line 2\)"):
        load_squad(SquadSource(train, split_titles={"test": titles}))


def test_held_out_splits_are_the_last_articles_whole(tmp_path):
    train = write_json(tmp_path / "train.json", squad_json(TRAIN_ARTICLES))
    splits = load_squad(SquadSource(train, heldout_articles=2))
    reef, penicillin, volcano = TRAIN_ARTICLES[5], TRAIN_ARTICLES[4], TRAIN_ARTICLES[3]
    assert len(splits["test"].sources) == sum(len(q) for _, q in reef[1] + penicillin[1])
    assert len(splits["valid"].sources) == sum(len(q) for _, q in volcano[1] + TRAIN_ARTICLES[2][1])
    with pytest.raises(DataError, match="cannot give 3 held-out article"):
        load_squad(SquadSource(train, heldout_articles=3))


def test_limit_keeps_the_first_examples_and_counts_only_what_was_read(tmp_path):
    train = write_json(tmp_path / "train.json", squad_json(TRAIN_ARTICLES))
    splits = load_squad(SquadSource(train, heldout_articles=1), limit=3)
    assert [len(s.sources) for s in splits.values()] == [3, 3, 3]
    assert splits["train"].report.documents_in == 3


# ------------------------------------------------------------------- passage windows


def sentence_of(words, index):
    text = " ".join(words)
    return next(s for s in text.split(". ") if words[index] in s.split())


@pytest.mark.parametrize("budget", [1, 3, 12, 20, 35, 60, 1000])
def test_window_holds_the_answer_and_its_sentence_when_it_fits(budget):
    context = ("One two three. Four five six seven eight nine ten eleven twelve. The answer is here "
               "in the middle sentence. Thirteen fourteen fifteen sixteen. Seventeen eighteen.")
    start = context.index("answer is here")
    text, cut, kept = passage_window(context, start, len("answer is here"), budget)
    words = text.split(" ")
    assert len(words) == min(budget, len(context.split()))
    assert cut == (budget < len(context.split()))
    if budget >= 3:
        assert "answer is here" in text
    sentence = "The answer is here in the middle sentence."
    assert kept == (budget >= len(sentence.split()))
    if kept:
        assert sentence in text


def test_window_keeps_the_beginning_when_the_answer_sentence_is_early():
    context = "Alpha beta gamma. Delta epsilon zeta eta theta iota kappa. Lambda mu nu xi omicron pi rho."
    text, cut, kept = passage_window(context, context.index("beta"), 4, 6)
    assert (text, cut, kept) == ("Alpha beta gamma. Delta epsilon zeta", True, True)


def test_answer_longer_than_the_budget_is_skipped_and_counted():
    report = Report()
    corpus = squad_json(TRAIN_ARTICLES[3:4])
    sources, _ = squad_examples(corpus["data"], "v.json", report, max_source_tokens=7)
    assert report.counts["answer_too_long"] == 2  # 'the North American ...' and 'where tectonic ...'
    assert all(len(s.split(" ")) <= 7 for s in sources)
    assert report.counts["truncated_passage"] == len(sources)


# ------------------------------------------------------------------- prepare, sentencepiece, WordPiece


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("squad")
    paths = write_sample(tmp / "sample")
    bad = write_json(tmp / "bad.json", bad_squad())
    argv = ["--corpus", "squad", "--squad-json", str(bad), "--split-json", f"valid={paths['dev']}",
            "--split-titles", f"test={paths['doclist_test']}", "--out", str(tmp / "out"),
            "--vocab-size", "400", "--max-source-tokens", "48"]
    prepare_cli.main(argv)
    return tmp / "out"


def test_prepare_writes_pairs_and_the_repair_table(prepared):
    report = json.loads((prepared / "preprocess_report.json").read_text())
    train = report["splits"]["train"]
    assert train["repairs"]["missing_field"] == 4 and train["repairs"]["answer_offset"] == 1
    skipped = sum(v for k, v in train["repairs"].items()
                  if k not in ("answer_offset", "truncated_passage", "answer_sentence_cut"))
    # every skip is a question read, but the paragraph without a 'qas' list, which has none
    assert train["documents_in"] - train["documents_out"] == skipped - 1
    sources = (prepared / "raw" / "train.source").read_text().splitlines()
    assert all(f" {SEPARATOR} " in s and len(s.split(" ")) <= 48 for s in sources)
    assert report["spm"]["user_defined_symbols"] == [SEPARATOR]


def test_sep_is_one_sentencepiece_piece_and_one_dictionary_symbol(prepared):
    model = sentencepiece.SentencePieceProcessor(model_file=str(prepared / "spm.model"))
    assert SEPARATOR in model.encode(f"Paris {SEPARATOR} The capital", out_type=str)
    dictionary = Dictionary.load(str(prepared / "bin" / "dict.source.txt"))
    sep = dictionary.index(SEPARATOR)
    assert sep != dictionary.unk()
    data = data_utils.load_indexed_dataset(str(prepared / "bin" / "train.source-target.source"), dictionary)
    assert all((data[i] == sep).sum() == 1 for i in range(len(data)))


def test_squad_flags_need_corpus_squad_and_squad_needs_a_file(tmp_path):
    with pytest.raises(DataError, match="--squad-json: only for --corpus squad"):
        prepare(PrepareConfig(corpus="aclsum", out=tmp_path / "o", squad_json=tmp_path / "x.json"))
    with pytest.raises(DataError, match="--corpus squad needs --squad-json"):
        prepare(PrepareConfig(corpus="squad", out=tmp_path / "o"))
    with pytest.raises(DataError, match="expected valid=FILE or test=FILE"):
        prepare(PrepareConfig(corpus="squad", out=tmp_path / "o", squad_json=tmp_path / "x.json",
                              split_json=["train=x.json"]))


def test_wordpiece_binarizes_sep_as_berts_sep(prepared, tmp_path):
    """BERT's [SEP] is fairseq's </s> in WordPiece data (the converters map that row), so the
    separator must become that id, not <unk>."""
    prepare_wordpiece(str(prepared / "raw"), tmp_path / "wp")
    pieces = (tmp_path / "wp" / "wordpiece" / "train.source").read_text().splitlines()
    dictionary = Dictionary.load(str(tmp_path / "wp" / "bin" / "dict.source.txt"))
    data = data_utils.load_indexed_dataset(str(tmp_path / "wp" / "bin" / "train.source-target.source"), dictionary)
    for i in range(len(data)):
        tokens = data[i]
        assert (tokens == dictionary.unk()).sum() == 0, pieces[i]
        assert (tokens[:-1] == dictionary.eos()).sum() == 1  # the separator, before the final </s>
