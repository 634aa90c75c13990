"""Every name the plugin registers is new to fairseq, and the environment stays clean."""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

PROBE = r"""
import fairseq.criterions, fairseq.models, fairseq.tasks
from fairseq.criterions import CRITERION_REGISTRY
from fairseq.models import ARCH_CONFIG_REGISTRY, MODEL_REGISTRY
from fairseq.tasks import TASK_REGISTRY

registries = {"model": MODEL_REGISTRY, "arch": ARCH_CONFIG_REGISTRY,
              "task": TASK_REGISTRY, "criterion": CRITERION_REGISTRY}
before = {kind: dict(reg) for kind, reg in registries.items()}
import user_dir
for kind, reg in registries.items():
    for name, obj in reg.items():
        if getattr(obj, "__module__", "").startswith("user_dir"):
            clash = name in before[kind]
            print(f"{kind}\t{name}\t{'CLASH' if clash else 'new'}")
"""


@pytest.mark.e2e  # runs Python processes
def test_registered_names_do_not_clash_with_fairseq():
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    rows = [line.split("\t") for line in out.splitlines() if "\t" in line]
    names = {(kind, name) for kind, name, _ in rows}
    assert ("task", "abstractive_summarization") in names
    assert ("arch", "bart_summ_tiny") in names
    clashes = [(kind, name) for kind, name, status in rows if status == "CLASH"]
    assert clashes == []


def test_requirements_pin_everything_and_never_apex_or_torchaudio():
    lines = [
        line.strip() for line in (REPO / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    names = {line.split("==")[0].lower().replace("_", "-") for line in lines}
    assert all("==" in line for line in lines), [line for line in lines if "==" not in line]
    assert "apex" not in names and "torchaudio" not in names
    assert {"torch", "ve-fairseq", "sentencepiece", "rouge-score", "aclsum"} <= names
