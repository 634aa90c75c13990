"""Fixtures shared by every test directory. The folders mirror the packages: ``tests/<family>/``,
``tests/compat/``, ``tests/decoding/``, ``tests/modules/``, ``tests/noising/``, ``tests/convert/``,
``tests/data/``, ``tests/scoring/``, ``tests/training/``; ``tests/plugin/`` holds what the
plugin as a whole promises (its registry, every family's surfaces, the foundation run),
``tests/demo/`` and ``tests/docs/`` the main job and the documentation's commands.

* ``aclsum_bin``: the first 8 documents of each ACLSum split, prepared once a session
  (``python -m preprocess.prepare``, sentencepiece 500), for the tests that train on real text;
* ``bart_tiny_checkpoint``: one update of ``bart_summ_tiny`` on ``aclsum_bin``, saved by
  ``fairseq-train`` (with EMA weights, so that it can also seed ``--ema-seed-model``), built once.

Session fixtures are built once per pytest process (once per worker under ``-n 2``); tests must
not change them (copy a file before writing beside it).

Helper modules the tests import live in ``tests/helpers/``: ``harness`` (preprocess -> train ->
generate in-process), ``parity`` (perturbed weights, beam reorders), ``crafted`` (hostile
checkpoints), ``toys`` (the one toy dictionary, ``toy_dictionary(words, *symbols)``, which model
builders outside fixtures call too, and a bad SQuAD file), ``prophetnet_oracle`` /
``deberta_oracle`` (random-init HF models and the builders their parity and converter tests
share), ``s2s_ft_models`` (the toy s2s-ft model), ``hostile`` (hostile model files),
``half_precision`` (every family built for the fp16/bf16 tests), ``activation_checkpointing``;
``record_saves.py`` and ``audit_run.py`` are scripts.
pyproject's ``pythonpath`` puts that folder on ``sys.path``; test files are imported with
``--import-mode=importlib``, so a new ``tests/<family>/test_x.py`` needs no ``__init__.py`` and
two directories may hold files of the same name. Import shared helpers from a helper module,
never from another test file.
"""

import os
import re

import pytest
import torch

from harness import prepare_corpus, train

ACLSUM_LIMIT = 8
# what a docs block's command costs, roughly, in fairseq processes started
COMMAND_WEIGHTS = [(r"run_demo\.sh", 5), (r"\bbash scripts/", 3), (r"\bfairseq-", 1), (r"\bpython ", 1)]

if os.environ.get("PYTEST_XDIST_WORKER"):
    # scripts/test.sh runs two pytest processes on two cores: one thread each (and for the
    # processes they start), instead of four threads fighting over two cores
    torch.set_num_threads(1)
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def pytest_collection_modifyitems(items):
    """The slowest first, so that two processes (scripts/test.sh: ``-n 2 --dist loadscope``, one
    module or docs page a unit) finish together: the docs pages (the one that starts the most
    fairseq processes first, by :data:`COMMAND_WEIGHTS`), then the modules with end-to-end tests,
    then the rest; a unit's tests stay together and in order."""
    slow_modules = {item.module.__name__ for item in items if item.get_closest_marker("e2e")}
    commands = {}  # docs page class -> commands its blocks start
    for item in items:
        if item.cls is not None and item.cls.__name__.startswith("TestPage_") and hasattr(item, "callspec"):
            block = item.callspec.params["block"]
            text = block.text + "".join(block.setup)
            commands[item.cls] = commands.get(item.cls, 0) + sum(
                weight * len(re.findall(pattern, text)) for pattern, weight in COMMAND_WEIGHTS)

    def weight(item):
        if item.cls in commands:
            return (0, -commands[item.cls])
        return (1 if item.module.__name__ in slow_modules else 2, 0)

    items.sort(key=weight)


@pytest.fixture(scope="session")
def aclsum_bin(tmp_path_factory):
    """``OUT/bin`` of ``python -m preprocess.prepare --corpus aclsum --limit 8 --vocab-size 500``."""
    return prepare_corpus("aclsum", tmp_path_factory.mktemp("aclsum"), limit=ACLSUM_LIMIT)


@pytest.fixture(scope="session")
def bart_tiny_checkpoint(aclsum_bin, tmp_path_factory):
    """``checkpoint_last.pt`` of one update of ``bart_summ_tiny`` on :func:`aclsum_bin`."""
    flags = ["--max-update", "1", "--max-tokens", "600", "--disable-validation", "--store-ema"]
    return train(aclsum_bin, tmp_path_factory.mktemp("bart_tiny"), "bart_summ_tiny", flags) / "checkpoint_last.pt"


# The doc blocks' table, printed after the test summary: what each block of README.md and docs/*.md
# did and how long it took, from the ``doc_block`` property each test of
# tests/docs/test_doc_commands.py records (pytest-xdist carries it back from its workers; this
# hook lives here because only this conftest is loaded in pytest-xdist's controlling process).
def pytest_terminal_summary(terminalreporter):
    rows = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            properties = dict(getattr(report, "user_properties", ()))
            if "doc_block" in properties and getattr(report, "when", "call") in ("setup", "call"):
                name = report.nodeid.split("[", 1)[-1].rstrip("]")
                rows[name] = properties["doc_block"]
    if rows:
        width = max(len(name) for name in rows)
        terminalreporter.write_sep("-", "doc blocks (tests/docs/test_doc_commands.py)")
        for name in sorted(rows, key=_page_and_line):
            terminalreporter.write_line(f"{name:<{width}}  {rows[name]}")


def _page_and_line(name):
    page, _, line = name.rpartition(":")
    return (page != "README.md", page, int(line) if line.isdigit() else 0)
