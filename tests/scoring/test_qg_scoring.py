"""BLEU through sacrebleu: the plugin's corpus BLEU (the scorer command and validation-time
``--eval-bleu`` summed over batches) equals the ``sacrebleu`` command line to the last digit;
METEOR is computed only where WordNet is installed, and says why not otherwise."""

import subprocess
import sys
from pathlib import Path

import pytest
from fairseq.logging import metrics

from fairseq_ext.scoring import BleuStats, bleu_metric, corpus_bleu, meteor_unavailable_reason
from fairseq_ext.scoring.meteor import corpus_meteor
from fairseq_ext.scoring.qg import format_scores, score_files
from fairseq_ext.scoring.validation import bleu_logging_output, log_bleu, validation_generation_args

SACREBLEU = str(Path(sys.executable).parent / "sacrebleu")
HYPS = [
    "what does a lighthouse serve as for ships?",
    "When was the Pharos of Alexandria completed ?",
    "who invented the lens",
    "",
    "What did the Fresnel lens replace in 1822?",
    "How many queens does a colony have?",
    "Where did Gutenberg introduce printing with movable type?",
]
REFS = [
    "What does a lighthouse serve as for ships at sea?",
    "Around when was the Pharos of Alexandria completed?",
    "Who invented the Fresnel lens?",
    "What damaged the Pharos of Alexandria?",
    "What did the Fresnel lens replace?",
    "How many queens does a honey bee colony have?",
    "In which city did Gutenberg introduce printing?",
]


def cli_bleu(tmp_path, hyps, refs, *flags):
    (tmp_path / "hyp.txt").write_text("".join(h + "\n" for h in hyps), encoding="utf-8")
    (tmp_path / "ref.txt").write_text("".join(r + "\n" for r in refs), encoding="utf-8")
    command = [SACREBLEU, str(tmp_path / "ref.txt"), "-i", str(tmp_path / "hyp.txt"), "-w", "2", "-b", *flags]
    run = subprocess.run(command, capture_output=True, text=True, check=True)
    return run.stdout.strip()


@pytest.mark.parametrize("flags,lowercase", [((), False), (("-lc",), True)])
def test_scorer_bleu_equals_the_sacrebleu_command_line(tmp_path, flags, lowercase):
    expected = cli_bleu(tmp_path, HYPS, REFS, *flags)
    result = score_files(tmp_path / "hyp.txt", tmp_path / "ref.txt", lowercase=lowercase)
    assert f"{result['bleu']:.2f}" == expected
    assert float(expected) > 0
    case = "lc" if lowercase else "mixed"
    assert result["bleu_signature"].startswith(f"nrefs:1|case:{case}|eff:no|tok:13a|smooth:exp")


def test_batch_statistics_add_up_to_the_corpus_score(tmp_path):
    metric = bleu_metric()
    whole = BleuStats.of(metric, HYPS, REFS)
    summed = BleuStats.of(metric, HYPS[:3], REFS[:3]) + BleuStats.of(metric, HYPS[3:4], REFS[3:4]) \
        + BleuStats.of(metric, HYPS[4:], REFS[4:])
    assert summed == whole
    # the mean of per-batch scores is not corpus BLEU: the sums are what make it exact
    assert summed.score(metric).score == pytest.approx(corpus_bleu(HYPS, REFS)[0].score, abs=0)


def test_validation_bleu_over_batches_equals_the_command_line(tmp_path):
    """What --eval-bleu logs: per-batch logging outputs, fairseq's reduce, the derived bleu."""
    metric = bleu_metric()
    batches = [(0, 2), (2, 3), (3, 7)]
    with metrics.aggregate(new_root=True) as agg:
        for start, end in batches:  # fairseq reduces once per validation batch
            log_bleu([bleu_logging_output(metric, HYPS[start:end], REFS[start:end])], metric)
        logged = agg.get_smoothed_values()["bleu"]
    assert f"{logged:.2f}" == cli_bleu(tmp_path, HYPS, REFS)


def test_training_batches_without_statistics_log_no_bleu():
    with metrics.aggregate(new_root=True) as agg:
        log_bleu([{"loss": 1.0}], bleu_metric())
        assert "bleu" not in agg.get_smoothed_values()


def test_validation_generation_args_are_shared_or_refused():
    rouge = '{"beam": 2, "max_len_b": 20}'
    assert validation_generation_args(True, rouge, False, "{}") == {"beam": 2, "max_len_b": 20}
    assert validation_generation_args(False, rouge, True, '{"beam": 1}') == {"beam": 1}
    assert validation_generation_args(True, rouge, True, "{}") == {"beam": 2, "max_len_b": 20}
    with pytest.raises(ValueError, match="share one validation generation"):
        validation_generation_args(True, rouge, True, '{"beam": 5}')


def test_scorer_prints_signature_rouge_l_and_says_why_no_meteor(tmp_path):
    cli_bleu(tmp_path, HYPS, REFS)
    run = subprocess.run([sys.executable, "-m", "fairseq_ext.cli.qg", str(tmp_path / "hyp.txt"),
                          str(tmp_path / "ref.txt"), "--json", str(tmp_path / "s.json")],
                         capture_output=True, text=True, check=True)  # fmt: skip
    lines = run.stdout.splitlines()
    bleu = cli_bleu(tmp_path, HYPS, REFS)
    assert lines[0].startswith(f"BLEU-4   {bleu}  sacrebleu nrefs:1|case:mixed|eff:no|tok:13a")
    assert lines[1].startswith("ROUGE-L  ")
    if meteor_unavailable_reason() is not None:  # this machine: no WordNet data installed
        assert lines[2].startswith("METEOR   not computed: nltk's METEOR needs the WordNet corpus")
    else:
        assert lines[2].startswith("METEOR   ") and "not METEOR 1.5" in lines[2]


def test_rouge_l_is_the_plugins_rouge_l(tmp_path):
    from fairseq_ext.scoring.rouge import score_corpus

    cli_bleu(tmp_path, HYPS, REFS)
    result = score_files(tmp_path / "hyp.txt", tmp_path / "ref.txt")
    assert result["rougeL"] == pytest.approx(100 * score_corpus(HYPS, REFS)["rougeL"]["f"], abs=1e-9)
    assert 0 < result["rougeL"] < 100


def test_scorer_refuses_mismatched_files(tmp_path):
    (tmp_path / "h").write_text("a\nb\n")
    (tmp_path / "r").write_text("a\n")
    run = subprocess.run([sys.executable, "-m", "fairseq_ext.cli.qg", str(tmp_path / "h"), str(tmp_path / "r")],
                         capture_output=True, text=True)  # fmt: skip
    assert run.returncode != 0 and "has 2 lines but" in run.stderr


class FakeWordNet:
    """Synonyms for a handful of words, in the shape nltk's METEOR asks of WordNet."""

    SYNONYMS = {"built": ["constructed"], "made": ["built", "constructed"]}

    class _Lemma:
        def __init__(self, name):
            self._name = name

        def name(self):
            return self._name

    class _Synset:
        def __init__(self, names):
            self._names = names

        def lemmas(self):
            return [FakeWordNet._Lemma(n) for n in self._names]

    def synsets(self, word, *args, **kwargs):
        return [self._Synset([word, *self.SYNONYMS.get(word, [])])] if word in self.SYNONYMS else []


def test_meteor_is_nltks_sentence_meteor_averaged():
    from nltk.translate.meteor_score import single_meteor_score

    hyps, refs = ["When was the tower made ?", "who built it"], ["When was the tower built?", "Who constructed it?"]
    ours = corpus_meteor(hyps, refs, wordnet=FakeWordNet())
    direct = [single_meteor_score(r.lower().replace("?", " ?").split(), h.lower().split(), wordnet=FakeWordNet())
              for h, r in zip(hyps, refs)]  # fmt: skip
    assert ours == pytest.approx(100 * sum(direct) / 2)
    assert format_scores({"bleu": 1.0, "bleu_signature": "sig", "bleu_precisions": [1, 1, 1, 1], "bleu_bp": 1.0,
                          "pairs": 2, "rougeL": 1.0, "rougeL_conf_int": [0, 2], "meteor": ours,
                          "meteor_note": "nltk METEOR"}).splitlines()[2].startswith(f"METEOR   {ours:.2f}")
