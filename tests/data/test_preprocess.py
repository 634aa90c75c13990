"""Corpus readers, counted cleaning, sentencepiece and the full ``prepare`` pipeline."""

import json
import re
from pathlib import Path

import pytest

from fairseq_ext.data import (
    DataError,
    DictionaryMismatch,
    LineCountMismatch,
    PrepareConfig,
    clean_documents,
    clean_pairs,
    corpora,
    load_aclsum,
    load_aclsum_long,
    load_wiki,
    prepare,
    read_lines,
    strip_markup,
    train_spm,
    write_dictionary,
)
from fairseq_ext.data.corpora import read_aclsum_records
from preprocess import prepare as prepare_cli

TINY_VOCAB = 300
WIKI_MARKUP = ("{{", "}}", "[[", "]]", "<ref", "{|", "'''")


# ---------------------------------------------------------------- cleaning, one repair each


def test_empty_lines_remove_the_pair_count_it_and_keep_alignment():
    src = [b"s1", b"", b"s3", b"s4", b"  \t "]
    tgt = [b"t1", b"t2", b"", b"t4", b"t5"]
    pairs, report = clean_pairs(src, tgt, ("a.source", "a.target"))
    assert pairs == [("s1", "t1"), ("s4", "t4")]
    assert report.counts["empty_pair"] == 3
    assert report.locations["empty_pair"] == ["a.source:2", "a.target:3", "a.source:5"]
    assert (report.documents_in, report.documents_out) == (5, 2)


def test_empty_line_is_an_error_under_strict():
    with pytest.raises(DataError, match="a.target:2"):
        clean_pairs([b"s1", b"s2"], [b"t1", b""], ("a.source", "a.target"), strict=True)


def test_count_mismatch_names_both_files_and_counts():
    with pytest.raises(LineCountMismatch, match=r"x\.source has 3 lines but x\.target has 2"):
        clean_pairs([b"a", b"b", b"c"], [b"a", b"b"], ("x.source", "x.target"))


def test_invalid_utf8_is_replaced_and_counted():
    pairs, report = clean_pairs([b"caf\xe9 ok", b"fine"], [b"t\xff\xfe", b"t2"], ("s", "t"))
    assert pairs == [("caf\ufffd ok", "t\ufffd\ufffd"), ("fine", "t2")]
    assert report.counts["invalid_utf8"] == 2
    assert report.locations["invalid_utf8"] == ["s:1", "t:1"]


def test_invalid_utf8_is_an_error_naming_file_and_line_under_strict():
    with pytest.raises(DataError, match=r"s:2: invalid UTF-8 at byte 3"):
        clean_pairs([b"ok", b"caf\xe9"], [b"t1", b"t2"], ("s", "t"), strict=True)


def test_crlf_is_normalized_and_counted():
    pairs, report = clean_pairs([b"s1\r", b"s2\r"], [b"t1\r", b"t2"], ("s", "t"))
    assert pairs == [("s1", "t1"), ("s2", "t2")]
    assert report.counts["crlf"] == 3
    assert report.counts["control"] == 0


def test_lone_carriage_return_never_splits_a_line(tmp_path):
    path = tmp_path / "x.source"
    path.write_bytes(b"one\rstill one\r\ntwo\n")
    lines = read_lines(path)
    assert lines == [b"one\rstill one\r", b"two"]
    pairs, report = clean_pairs(lines, [b"t1", b"t2"], ("s", "t"))
    assert pairs == [("one still one", "t1"), ("two", "t2")]
    assert (report.counts["crlf"], report.counts["control"]) == (1, 1)


def test_nul_bytes_are_removed_and_counted():
    pairs, report = clean_pairs([b"a\x00b", b"\x00\x00c"], [b"t1", b"t2"], ("s", "t"))
    assert pairs == [("ab", "t1"), ("c", "t2")]
    assert report.counts["nul"] == 2
    assert report.counts["control"] == 0


def test_control_characters_are_removed_and_counted():
    src = [b"a\x07b", b"x\x0cy", "\ufeffbom".encode(), b"plain\ttab"]
    pairs, report = clean_pairs(src, [b"t"] * 4, ("s", "t"))
    assert [p[0] for p in pairs] == ["ab", "x y", "bom", "plain tab"]
    assert report.counts["control"] == 3
    assert report.locations["control"] == ["s:1", "s:2", "s:3"]


def test_control_characters_are_an_error_under_strict():
    with pytest.raises(DataError, match=r"s:1: nul character \(drop --strict"):
        clean_pairs([b"a\x00"], [b"t"], ("s", "t"), strict=True)


def test_over_long_documents_are_truncated_and_counted():
    src = [b"w1 w2 w3 w4 w5", b"w1 w2 w3"]
    tgt = [b"a b c", b"a b c d"]
    pairs, report = clean_pairs(src, tgt, ("s", "t"), max_source_tokens=3, max_target_tokens=3)
    assert pairs == [("w1 w2 w3", "a b c"), ("w1 w2 w3", "a b c")]
    assert report.counts["truncated_source"] == 1
    assert report.counts["truncated_target"] == 1
    assert report.locations["truncated_target"] == ["t:2"]


def test_a_document_that_becomes_empty_after_repairs_drops_its_pair():
    pairs, report = clean_pairs([b"\x00\x01", b"s2"], [b"t1", b"t2"], ("s", "t"))
    assert pairs == [("s2", "t2")]
    counts = report.counts
    assert (counts["nul"], counts["control"], counts["empty_pair"]) == (1, 1, 1)


def test_clean_documents_drops_and_counts_empty_paragraphs_and_documents():
    docs, report = clean_documents([["p1", "", "p3"], ["\x00"], ["q1"]], "w")
    assert docs == [["p1", "p3"], ["q1"]]
    assert report.counts["empty_line"] == 2
    assert report.counts["empty_document"] == 1
    assert report.locations["empty_document"] == ["w:2"]


# ---------------------------------------------------------------- corpora


def test_aclsum_has_100_50_100_aligned_pairs():
    sizes = {}
    for split in ("train", "valid", "test"):
        data = load_aclsum(split)
        records = read_aclsum_records(split)
        sizes[split] = len(data.sources)
        assert len(data.sources) == len(data.targets) == len(records)
        for i in (0, len(records) - 1):
            assert data.sources[i].startswith(records[i]["sentences"]["abstract"][0])
            assert data.sources[i].endswith(records[i]["sentences"]["conclusion"][-1])
            assert data.targets[i].startswith(records[i]["summary"]["challenge"])
            assert data.targets[i].endswith(records[i]["summary"]["outcome"])
    assert sizes == {"train": 100, "valid": 50, "test": 100}


def test_aclsum_long_uses_the_same_papers_and_splits():
    for split, size in (("train", 100), ("valid", 50), ("test", 100)):
        data = load_aclsum_long(split)
        assert len(data.sources) == len(data.targets) == size
        assert sum(data.report.counts.values()) == 0
        assert all(len(s.split()) > len(t.split()) for s, t in zip(data.sources, data.targets))


def test_aclsum_long_counts_missing_and_empty_papers(tmp_path, monkeypatch):
    (tmp_path / "paper_jsons").mkdir()
    ids = ["P1", "P2", "P3", "P4"]
    (tmp_path / "train.jsonl").write_text("".join(json.dumps({"id": i}) + "\n" for i in ids))
    for pid, body, abstract in (("P1", ["b1", "b2"], "abs"), ("P3", [], "abs"), ("P4", ["b"], "")):
        paper = {"abstract": abstract, "pdf_parse": {"body_text": [{"text": t} for t in body]}}
        (tmp_path / "paper_jsons" / f"{pid}.json").write_text(json.dumps(paper))
    monkeypatch.setattr(corpora, "aclsum_dir", lambda: tmp_path)
    data = load_aclsum_long("train")
    assert (data.sources, data.targets) == (["b1 b2"], ["abs"])
    counts = data.report.counts
    assert (counts["missing_paper"], counts["empty_body"], counts["empty_abstract"]) == (1, 1, 1)
    assert data.report.locations["missing_paper"] == [str(tmp_path / "paper_jsons" / "P2.json")]


def test_wiki_yields_about_106_articles_without_markup():
    splits, skipped = load_wiki()
    sizes = {name: len(docs) for name, docs in splits.items()}
    assert sizes == {"train": 98, "valid": 4, "test": 4}
    assert skipped == {"skipped_redirect": 99, "skipped_namespace": 1}
    paragraphs = [p for docs in splits.values() for doc in docs for p in doc]
    assert 400_000 < sum(len(p.split()) for p in paragraphs) < 500_000
    for marker in WIKI_MARKUP:
        assert not [p for p in paragraphs if marker in p], marker


def test_strip_markup_handles_nesting_links_refs_tables_and_headings():
    wikitext = (
        "{{Infobox|a={{nested|{{deeper}}}}}}'''Bold''' [[Target|label]] and [[plain]]"
        "<ref name=x>cite {{cite|y}}</ref><ref name=z/> [http://x.org site] [http://y]"
        " [[File:a.jpg|thumb|caption [[inner]] [1]]]<!-- hidden -->&amp; end.\n"
        "== Heading ==\n{| class=t\n|-\n| cell {{t}}\n|}\n* item [[Category:Z]]\n"
        "== See also ==\n* [[Elsewhere]]\n"
    )
    assert strip_markup(wikitext) == ["Bold label and plain site & end.", "item"]


# ---------------------------------------------------------------- full pipeline


def _write_pair_dir(directory: Path, sizes: dict[str, int]) -> None:
    """A user corpus built from aclsum text, every line tagged with its index."""
    directory.mkdir()
    for split, size in sizes.items():
        data = load_aclsum("train" if split == "train" else "test", size)
        for side, docs in (("source", data.sources), ("target", data.targets)):
            lines = [f"{side}{i} {text}" for i, text in enumerate(docs)]
            (directory / f"{split}.{side}").write_text("\n".join(lines) + "\n")


def _inject_faults(directory: Path) -> None:
    """Train line (1-based): 3 empty source, 5 CRLF target, 7 NUL, 9 bad UTF-8,
    11 control char in source, 13 blank target."""
    for side, faults in (
        ("source", {3: lambda s: b"", 7: lambda s: s[:4] + b"\x00" + s[4:],
                    9: lambda s: s + b" \xe9", 11: lambda s: s + b"\x07"}),
        ("target", {5: lambda s: s + b"\r", 13: lambda s: b"   "}),
    ):  # fmt: skip
        path = directory / f"train.{side}"
        lines = read_lines(path)
        for lineno, fault in faults.items():
            lines[lineno - 1] = fault(lines[lineno - 1])
        path.write_bytes(b"\n".join(lines) + b"\n")


def _load_binarized(prefix: Path, dict_path: Path):
    from fairseq.data import Dictionary, data_utils

    dictionary = Dictionary.load(str(dict_path))
    return data_utils.load_indexed_dataset(str(prefix), dictionary), dictionary


@pytest.fixture(scope="module")
def pair_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("pairs")
    _write_pair_dir(root / "corpus", {"train": 30, "valid": 5, "test": 5})
    _inject_faults(root / "corpus")
    cfg = PrepareConfig(corpus=str(root / "corpus"), out=root / "out", vocab_size=TINY_VOCAB)
    return cfg, prepare(cfg)


def test_prepare_counts_every_repair_and_keeps_pairs_aligned(pair_run):
    cfg, report = pair_run
    saved = json.loads((cfg.out / "preprocess_report.json").read_text())
    train = saved["splits"]["train"]
    assert train["repairs"] == {
        "control": 1, "crlf": 1, "empty_pair": 2, "invalid_utf8": 1, "nul": 1,
    }  # fmt: skip
    assert (train["documents_in"], train["documents_out"]) == (30, 28)
    assert train["locations"]["empty_pair"][0].endswith("train.source:3")
    sources = (cfg.out / "raw" / "train.source").read_text().splitlines()
    targets = (cfg.out / "raw" / "train.target").read_text().splitlines()
    assert len(sources) == len(targets) == 28
    for src, tgt in zip(sources, targets):
        assert src.split()[0].removeprefix("source") == tgt.split()[0].removeprefix("target")
    assert saved["splits"]["valid"]["repairs"] == {}
    assert saved == json.loads(json.dumps(report))


def test_prepare_writes_the_binarized_layout(pair_run):
    cfg, report = pair_run
    out = cfg.out
    for split, size in (("train", 28), ("valid", 5), ("test", 5)):
        for side in ("source", "target"):
            assert len((out / "raw" / f"{split}.{side}").read_text().splitlines()) == size
            assert len((out / "spm" / f"{split}.{side}").read_text().splitlines()) == size
            dataset, dictionary = _load_binarized(
                out / "bin" / f"{split}.source-target.{side}", out / "bin" / f"dict.{side}.txt"
            )
            assert len(dataset) == size
            assert dataset[0][-1].item() == dictionary.eos()
    assert (out / "spm.model").read_bytes() == (out / "bin" / "spm.model").read_bytes()
    assert (out / "spm.vocab").is_file()
    dict_text = (out / "bin" / "dict.source.txt").read_text()
    assert dict_text == (out / "bin" / "dict.target.txt").read_text()
    assert report["spm"]["pieces"] == TINY_VOCAB
    assert len(dict_text.splitlines()) == TINY_VOCAB - 1  # all pieces but <unk>
    assert report["dictionary"]["pieces_missing"] == 0


def test_fairseq_ids_are_spm_ids_plus_three(pair_run):
    import sentencepiece
    from fairseq.data import Dictionary

    cfg, _ = pair_run
    model = sentencepiece.SentencePieceProcessor(model_file=str(cfg.out / "spm.model"))
    dictionary = Dictionary.load(str(cfg.out / "bin" / "dict.source.txt"))
    assert len(dictionary) == model.get_piece_size() + 3
    assert dictionary.index(model.id_to_piece(0)) == dictionary.unk() == 3
    for i in range(1, model.get_piece_size()):
        assert dictionary.index(model.id_to_piece(i)) == i + 3


def test_binarized_ids_decode_back_to_the_cleaned_text(pair_run):
    import sentencepiece

    cfg, _ = pair_run
    dataset, dictionary = _load_binarized(
        cfg.out / "bin" / "valid.source-target.target", cfg.out / "bin" / "dict.target.txt"
    )
    model = sentencepiece.SentencePieceProcessor(model_file=str(cfg.out / "bin" / "spm.model"))
    pieces = dictionary.string(dataset[2]).split()
    expected = (cfg.out / "raw" / "valid.target").read_text().splitlines()[2]
    assert model.decode(pieces) == expected


def test_prepare_reuses_model_and_dictionary_in_place_and_elsewhere(pair_run, tmp_path):
    cfg, first = pair_run
    dict_before = (cfg.out / "bin" / "dict.source.txt").read_text()
    for out in (tmp_path / "again", cfg.out):  # a new directory, then OUT itself (re-run)
        reuse = PrepareConfig(
            corpus=cfg.corpus, out=out, spm_model=cfg.out / "spm.model",
            srcdict=cfg.out / "bin" / "dict.source.txt",
        )  # fmt: skip
        report = prepare(reuse)
        assert (out / "bin" / "dict.source.txt").read_text() == dict_before
        assert report["dictionary"]["unk_tokens"] == first["dictionary"]["unk_tokens"]
        assert report["splits"]["train"]["stats"] == first["splits"]["train"]["stats"]


def test_prepare_rejects_a_dictionary_of_another_spm_model(pair_run, tmp_path):
    cfg, _ = pair_run
    other = tmp_path / "other.txt"
    other.write_text("\n".join(load_aclsum("valid").targets) + "\n")
    model = train_spm([other], tmp_path / "other", vocab_size=200, model_type="bpe")
    write_dictionary(model, {}, tmp_path / "dict.other.txt")
    before = (cfg.out / "preprocess_report.json").read_text()
    for out in (tmp_path / "out", cfg.out):  # a new directory, then an existing run
        wrong = PrepareConfig(
            corpus=cfg.corpus, out=out, spm_model=cfg.out / "spm.model",
            srcdict=tmp_path / "dict.other.txt",
        )  # fmt: skip
        with pytest.raises(DictionaryMismatch, match=r"dict\.other\.txt does not fit") as refused:
            prepare(wrong)
    assert not (tmp_path / "out").exists()  # a failed run leaves OUT as it was
    # the advice names the flag that accepts the unknown pieces, with a value that does
    rate = float(re.search(r"--max-unk-rate ([\d.]+)", str(refused.value)).group(1))
    accepted = PrepareConfig(corpus=cfg.corpus, out=tmp_path / "accepted", spm_model=cfg.out / "spm.model",
                             srcdict=tmp_path / "dict.other.txt", max_unk_rate=rate)
    assert prepare(accepted)["dictionary"]["unk_tokens"] > 0
    assert (cfg.out / "preprocess_report.json").read_text() == before
    assert not list(tmp_path.glob(".*staging*")) and not list(cfg.out.parent.glob(".*staging*"))


def test_cli_count_mismatch_fails_without_output(tmp_path, capsys):
    _write_pair_dir(tmp_path / "corpus", {"train": 4, "valid": 2})
    target = tmp_path / "corpus" / "valid.target"
    target.write_text(target.read_text() + "one more\n")
    with pytest.raises(SystemExit, match=r"valid.source has 2 lines but .*valid.target has 3"):
        prepare_cli.main(["--corpus", str(tmp_path / "corpus"), "--out", str(tmp_path / "out")])
    assert not (tmp_path / "out").exists()


def test_cli_missing_file_is_named(tmp_path):
    _write_pair_dir(tmp_path / "corpus", {"train": 4})
    with pytest.raises(SystemExit, match=r"missing input file: .*valid\.source"):
        prepare_cli.main(["--corpus", str(tmp_path / "corpus"), "--out", str(tmp_path / "out")])


def test_cli_strict_names_file_and_line(tmp_path):
    _write_pair_dir(tmp_path / "corpus", {"train": 14, "valid": 2})
    _inject_faults(tmp_path / "corpus")
    with pytest.raises(SystemExit, match=r"train\.source:3: empty document"):
        prepare_cli.main(
            ["--corpus", str(tmp_path / "corpus"), "--out", str(tmp_path / "out"), "--strict"]
        )


def test_prepare_aclsum_long_builds(tmp_path):
    cfg = PrepareConfig(corpus="aclsum_long", out=tmp_path, vocab_size=TINY_VOCAB, limit=3)
    report = prepare(cfg)
    dataset, _ = _load_binarized(
        tmp_path / "bin" / "test.source-target.source", tmp_path / "bin" / "dict.source.txt"
    )
    assert len(dataset) == 3
    assert report["splits"]["train"]["stats"]["source_words_avg"] > 1000


def test_prepare_wiki_writes_monolingual_documents(tmp_path):
    cfg = PrepareConfig(corpus="wiki", out=tmp_path, vocab_size=TINY_VOCAB, limit=2)
    report = prepare(cfg)
    for split in ("train", "valid", "test"):
        text = (tmp_path / "raw" / f"{split}.txt").read_text()
        documents = text.split("\n\n")
        assert len(documents) == 2
        assert all(doc.strip() and "\n\n" not in doc for doc in documents)
        lines = len(text.splitlines())  # paragraphs + one blank line between documents
        assert len((tmp_path / "spm" / f"{split}.txt").read_text().splitlines()) == lines
        dataset, _ = _load_binarized(tmp_path / "bin" / split, tmp_path / "bin" / "dict.txt")
        assert len(dataset) == lines
        assert sum(len(dataset[i]) == 1 for i in range(len(dataset))) == 1  # the doc break
        assert report["splits"][split]["stats"]["documents"] == 2
    assert (tmp_path / "bin" / "spm.model").is_file()
