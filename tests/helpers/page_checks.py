"""What a docs page's commands must have written, checked after the page's blocks ran
(``tests/docs/test_doc_commands.py`` runs every block once, then the page's check here on its
working directory and the blocks' standard outputs): one run of the commands serves both.

``PAGE_CHECKS`` maps a page to its check, ``check(work, outputs, shell)``: ``work`` is the
page's working directory, ``outputs`` the standard output of each block, in order, and
``shell(script)`` runs a bash script there as the blocks ran (returns the finished process).
"""

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent


def sacrebleu_cli(ref, hyp):
    """The sacrebleu command line's BLEU of ``hyp`` against ``ref`` (two decimals)."""
    run = subprocess.run([str(BIN / "sacrebleu"), str(ref), "-i", str(hyp), "-w", "2", "-b"],
                         capture_output=True, text=True, check=True)  # fmt: skip
    return run.stdout.strip()


def check_readme(work, outputs, shell):
    """README.md, "Your own data": the stand-in corpus (``my corpus``, tests/docs) went through the
    main job: data and run folders named from it, LEAD-3 from its own test sources, one summary a
    document (not joined by three, as ACLSum's aspects are) in its casing and spacing beside the
    tokenized words ROUGE read; another corpus of the same folder name is refused, naming what
    the data folder holds."""
    from fairseq_ext.data.surface import normalize

    (data,) = (work / "data").glob("my corpus_wp*")
    (run,) = (work / "runs").glob("demo-s2s_ft_copy-my corpus_wp*")
    assert (data / "bin" / "dict.source.txt").is_file() and (run / "results.md").is_file()
    stamp = (data / "corpus.txt").read_text()  # corpus=PATH limit=N prepared-by=...
    source = Path(stamp.split("corpus=", 1)[1].split(" limit=")[0])
    assert source.name == "my corpus" and source.is_dir(), stamp
    tests = len((run / "test.ref").read_text(encoding="utf-8").splitlines())
    lead = (run / "lead3.hyp").read_text(encoding="utf-8").splitlines()
    assert len(lead) == tests > 1 and all(line.startswith(f"Own document {i} of test.") for i, line in enumerate(lead))
    summaries = (run / "test.hyp").read_text(encoding="utf-8").splitlines()
    tokens = (run / "test.tokens.hyp").read_text(encoding="utf-8").splitlines()
    assert len(summaries) == tests
    assert ["".join(normalize(s).split()) for s in summaries] == ["".join(t.split()) for t in tokens]
    assert summaries != tokens and all(t == t.lower() for t in tokens)
    assert any("update 1;" in output and "my corpus" in output for output in outputs)

    refused = shell(f'mkdir -p elsewhere && ln -sfn {shlex.quote(str(source))} "elsewhere/my corpus" && '
                    'SOURCE_CORPUS="elsewhere/my corpus/" DATA_DIR= bash scripts/run_demo.sh')
    assert refused.returncode != 0 and "holds other data" in refused.stderr, refused.stderr[-2000:]


def check_question_generation(work, outputs, shell):
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


PAGE_CHECKS = {"README.md": check_readme, "docs/question_generation.md": check_question_generation}
