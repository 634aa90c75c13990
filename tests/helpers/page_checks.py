"""What a docs page's commands must have written, checked after the page's blocks ran
(``tests/docs/test_doc_commands.py`` runs every block once, then the page's check here on its
working directory and the blocks' standard outputs): one run of the commands serves both.

``PAGE_CHECKS`` maps a page to its check, ``check(work, outputs)``: ``work`` is the page's
working directory, ``outputs`` the standard output of each block, in order.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent


def sacrebleu_cli(ref, hyp):
    """The sacrebleu command line's BLEU of ``hyp`` against ``ref`` (two decimals)."""
    run = subprocess.run([str(BIN / "sacrebleu"), str(ref), "-i", str(hyp), "-w", "2", "-b"],
                         capture_output=True, text=True, check=True)  # fmt: skip
    return run.stdout.strip()


def check_question_generation(work, outputs):
    """docs/question_generation.md: each recipe chose its checkpoint by validation BLEU and scored
    the test set with the plugin's BLEU, which equals the sacrebleu command line on the same text;
    the page's scoring block prints our line and sacrebleu's JSON, which agree."""
    runs = work / "runs" / "qg"
    for family in ("prophetnet", "s2s_ft"):
        scores = json.loads((runs / family / "test.scores.json").read_text())
        assert scores["bleu_signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp")
        raw_ref = work / "data" / "squad_qg" / "raw" / "test.target"
        ref = raw_ref if family == "prophetnet" else runs / family / "test.ref"
        assert f"{scores['bleu']:.2f}" == sacrebleu_cli(ref, runs / family / "test.hyp")
        assert (runs / family / "checkpoint_best.pt").is_file()
        log = (runs / family / "train.log").read_text()
        assert "validation BLEU: sacrebleu nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp" in log
        assert re.search(r"valid on 'valid' subset .*\| bleu \d", log)
    ours = next(o for o in outputs if o.startswith("BLEU-4"))
    ours_bleu = ours.split()[1]
    theirs = json.loads(ours[ours.index("{"):])
    assert float(ours_bleu) == theirs["score"] and theirs["signature"] in ours
    assert (runs / "bart" / "checkpoint_best.pt").is_file()


PAGE_CHECKS = {"docs/question_generation.md": check_question_generation}
