"""ACLSum variants for the quality levers: the abstract alone as the source, one pair per
aspect (and joining the per-aspect summaries back into one line per paper)."""

import subprocess
import sys

import pytest

from fairseq_ext.data.corpora import (
    ACLSUM_TARGET_ASPECTS,
    load_aclsum,
    load_aclsum_abstract,
    load_aclsum_aspects,
    read_aclsum_records,
)
from fairseq_ext.data.join_lines import join_lines
from fairseq_ext.data.prepare import PrepareConfig, clean_corpus


def test_abstract_variant_keeps_the_pairs_and_only_the_abstract():
    for split in ("train", "valid", "test"):
        full, abstract = load_aclsum(split), load_aclsum_abstract(split)
        records = read_aclsum_records(split)
        assert abstract.targets == full.targets
        for source, whole, record in zip(abstract.sources, full.sources, records):
            assert source == " ".join(record["sentences"]["abstract"])
            assert whole.startswith(source) and len(whole) > len(source)


def test_aspect_variant_has_three_instructed_pairs_per_paper_in_order():
    full, aspects = load_aclsum("test", limit=5), load_aclsum_aspects("test", limit=5)
    assert len(aspects.sources) == len(aspects.targets) == 3 * len(full.sources) == 15
    for i, (source, target) in enumerate(zip(aspects.sources, aspects.targets)):
        aspect = ACLSUM_TARGET_ASPECTS[i % 3]
        assert source == f"{aspect}: {full.sources[i // 3]}"
        assert full.targets[i // 3].count(target) == 1
    assert join_lines(aspects.targets, 3) == full.targets


def test_cleaned_aspect_targets_join_into_the_cleaned_aclsum_targets():
    """The references a joined hypothesis is scored against are the aclsum ones."""
    joined, _, _ = clean_corpus(PrepareConfig(corpus="aclsum_aspects", out="unused", limit=4))
    whole, _, _ = clean_corpus(PrepareConfig(corpus="aclsum", out="unused", limit=4))
    for split in ("train", "valid", "test"):
        assert join_lines([t for _, t in joined[split]], 3) == [t for _, t in whole[split]]


def test_join_lines():
    assert join_lines(["a", "b ", "c", "d"], 2) == ["a b", "c d"]
    assert join_lines(["a", "b"], 1) == ["a", "b"]
    with pytest.raises(ValueError, match="not groups of 3"):
        join_lines(["a", "b"], 3)
    with pytest.raises(ValueError, match="at least one"):
        join_lines(["a"], 0)


def test_join_lines_cli(tmp_path):
    (tmp_path / "in.txt").write_text("a\nb\nc\nd\ne\nf\n")
    run = [sys.executable, "-m", "fairseq_ext.cli.join_lines", "--every", "3", str(tmp_path / "in.txt")]
    subprocess.run([*run, str(tmp_path / "out.txt")], check=True)
    assert (tmp_path / "out.txt").read_text() == "a b c\nd e f\n"
    (tmp_path / "in.txt").write_text("a\nb\n")
    failed = subprocess.run([*run, str(tmp_path / "bad.txt")], capture_output=True, text=True)
    assert failed.returncode != 0 and "in.txt: 2 lines are not groups of 3" in failed.stderr
