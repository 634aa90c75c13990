"""Every fenced ``bash`` and ``python`` block of README.md and docs/*.md runs, at tiny size.

How a doc author makes a block runnable
---------------------------------------
* Write real commands, exactly as a user types them from the repository root, in order: the
  blocks of one page run one after the other in one fresh working directory (the repository's
  ``user_dir``, ``scripts``, ``.venv`` ... are linked into it), so a later block may use what an
  earlier one wrote, and shell variables set by a block (``M=$(...)``) are seen by the next.
  New pages in ``docs/`` are picked up automatically; ```` ```text ```` / indented blocks are not run.
* Sizes shrink through :data:`SUBSTITUTIONS` (regular expressions applied to the block's text:
  ``--vocab-size``, ``--limit`` added to ``preprocess.prepare``, ``*_small/base/large`` ->
  ``*_tiny``, ``--max-update 1`` added to ``fairseq-train``, short summaries, placeholder paths)
  and :data:`ENVIRONMENT` (variables every recipe in ``scripts/`` reads: ``LIMIT``,
  ``MAX_EPOCH``, ``MAX_UPDATE``, ``BEAM`` ...); ``ARCH=<tiny>`` is put before every
  ``bash scripts/<family>/...`` and ``MODEL=<family> bash scripts/run_demo.sh``
  (:data:`TINY_ARCH`). A recipe that prepares data must honour ``LIMIT``. If a new command
  needs another size knob, add one line to these tables (with its reason), not a copy of the
  command.
* Placeholders a user replaces with files of their own (``/path/to/...``) must be listed in
  :data:`PLACEHOLDERS`, which builds a stand-in (a tiny corpus, a random HF checkpoint).
* Prerequisites that the page does not show (a checkpoint trained elsewhere) go in an HTML
  comment right before the block, invisible on the rendered page::

      <!-- doc-test: setup (a BART checkpoint the page assumes)
      fairseq-train data/aclsum/bin ... --save-dir checkpoints/bart
      -->

  (the rest of the first line says why; the commands follow, with the same substitutions).

* What a page's commands must have written is checked once its blocks ran, on the page's
  working directory and the blocks' outputs (and with commands of its own), by the page's entry
  in ``page_checks.PAGE_CHECKS`` (``tests/helpers/page_checks.py``): one run of the commands
  serves the page and the check.

* A block that truly cannot run here is skipped only by a visible comment right before it,
  with the reason, which the test reports (``pytest -rs``)::

      <!-- doc-test: skip runs the whole test suite, this test included -->

The test of each block is named ``PAGE:LINE``; at the end of the session a table says which
blocks ran, which were skipped and why, and how long each took (``tests/conftest.py``).
The blocks of one page are one test class (``TestPage_docs_zcodepp_md``), so that they run in
order in one process also under ``pytest -n 2 --dist loadscope``; torchrun gets a free port
(``PET_MASTER_PORT``).
"""

import hashlib
import os
import re
import shlex
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from page_checks import PAGE_CHECKS

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINKED = ("user_dir", "scripts", "fairseq_ext", "preprocess", "requirements.txt", "pyproject.toml", ".venv")
LIMIT = 6
BLOCK_TIMEOUT_S = 600

SUBSTITUTIONS = [
    # (pattern, replacement, why)
    (r"--vocab-size \d+", "--vocab-size 1000", "a vocabulary a corpus of 6 documents can fill"),
    (r"(python -m preprocess\.prepare(?:_wordpiece)?)\b", rf"\1 --limit {LIMIT}",
     "the first 6 documents of each split"),
    (r"\b(bart_summ|bart_ls|prophetnet_summ|zcodepp|transformer_sm)_(small|base|large|gpt2|gpt)\b", r"\1_tiny",
     "tiny architectures"),
    (r"\bfairseq-train\b", "fairseq-train --max-update 1", "one update"),
    (r"--max-update \d+", "--max-update 1", "one update"),
    (r"--max-epoch \d+", "--max-epoch 1", "one epoch"),
    (r"--min-len \d+", "--min-len 1", "short summaries"),
    (r"--max-len-b \d+", "--max-len-b 8", "short summaries"),
    (r"--pooling-layers \d+", "--pooling-layers 1", "the tiny BART-LS encoder has 2 layers"),
    (r"\bMAX_UPDATE=\d+", "MAX_UPDATE=1", "one update"),
    (r"\bSOURCE_POSITIONS=\d+", "SOURCE_POSITIONS=512", "short sources"),
]
ENVIRONMENT = {
    "LIMIT": str(LIMIT), "VOCAB_SIZE": "1000", "MAX_EPOCH": "1", "MAX_UPDATE": "1", "TOTAL_UPDATES": "1",
    "UPDATE_FREQ": "1", "WARMUP": "1", "STOP_HOURS": "0.05", "BEAM": "2", "MIN_LEN": "1", "MAX_LEN_B": "8",
    "TARGET_POSITIONS": "64", "GENERATOR_LAYERS": "1",
    "OMP_NUM_THREADS": "1",  # tiny sizes; the test command runs two pytest processes on two cores
}
TINY_ARCH = {
    "bart": "bart_summ_tiny", "bart_ls": "bart_ls_tiny", "prophetnet": "prophetnet_summ_tiny",
    "zcodepp": "zcodepp_tiny", "transformer_sm": "transformer_sm_tiny",
    # s2s_ft: none; its recipes start from MiniLM's weights, which fix the size
}
PLACEHOLDERS = {
    "/path/to/cnndm": "pair_corpus",
    "/path/to/prophetnet-large-uncased-cnndm": "hf_prophetnet",
    "/path/to/local/deberta-v3-base": "hf_deberta_v3",
}
DIRECTIVE = re.compile(r"<!--\s*doc-test:\s*(skip|setup)\b(.*?)-->", re.S)
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
RUNNABLE = {"bash": "bash", "sh": "bash", "python": "python"}


@dataclass
class Block:
    page: str
    line: int
    language: str
    text: str
    skip: str | None = None
    setup: list = field(default_factory=list)

    @property
    def name(self):
        return f"{self.page}:{self.line}"


def extract_blocks(path):
    """The runnable fenced blocks of a markdown page, with the doc-test directives written in
    the HTML comments between the previous block and this one."""
    text, blocks, previous_end = path.read_text(encoding="utf-8"), [], 0
    page = str(path.relative_to(REPO))
    for match in FENCE.finditer(text):
        language = RUNNABLE.get(match.group(1))
        between = text[previous_end : match.start()]
        previous_end = match.end()
        if language is None:
            continue
        block = Block(page, text.count("\n", 0, match.start()) + 1, language, match.group(2))
        for kind, body in DIRECTIVE.findall(between):
            if kind == "skip":
                block.skip = body.strip() or "no reason given"
            else:  # the rest of the directive's first line says why; commands follow
                block.setup.append(body.split("\n", 1)[1] if "\n" in body else "")
        blocks.append(block)
    return blocks


BLOCKS = [block for page in PAGES for block in extract_blocks(page)]


def shrink(text, placeholders):
    """``text`` with the size substitutions, ``ARCH=<tiny>`` before the recipes, and the
    placeholder paths replaced by their stand-ins."""
    for pattern, replacement, _ in SUBSTITUTIONS:
        text = re.sub(pattern, replacement, text)
    text = re.sub(r"(^|\s)(bash scripts/(\w+)/\w+\.sh)", lambda m: _with_arch(m, m.group(3)), text)
    text = re.sub(r"(^|\s)(bash scripts/run_demo\.sh)", lambda m: _with_arch(m, _demo_model(text, m.start())), text)
    for placeholder, builder in PLACEHOLDERS.items():
        if placeholder in text:
            text = text.replace(placeholder, shlex.quote(str(placeholders(builder))))
    return text


def _with_arch(match, family):
    arch = TINY_ARCH.get(family)
    return f"{match.group(1)}ARCH={arch} {match.group(2)}" if arch else match.group(0)


def _demo_model(text, position):
    line = text[text.rfind("\n", 0, position) + 1 : position]
    found = re.search(r"\bMODEL=(\w+)", line)
    return found.group(1) if found else "s2s_ft_copy"


# ---------------------------------------------------------------- running

BASH_PRELUDE = """set -euo pipefail
if [[ -f .doc-test-vars ]]; then source .doc-test-vars; fi
__doc_test_before="$(compgen -v | sort)"
"""
BASH_EPILOGUE = """
for __doc_test_name in $(comm -13 <(echo "${__doc_test_before}") <(compgen -v | sort)); do
    case "${__doc_test_name}" in __doc_test_*|BASH*|FUNCNAME|PIPESTATUS|_) ;; *) declare -p "${__doc_test_name}";; esac
done >> .doc-test-vars
"""


class Pages:
    """One working directory per page, built on first use, and the pages whose blocks failed."""

    def __init__(self, root):
        self.root = root
        self.workspaces, self.failed, self.built = {}, {}, {}
        self.outputs = {}  # page -> each block's standard output, in order

    def workspace(self, page):
        if page not in self.workspaces:
            work = self.root / re.sub(r"\W", "_", page)
            work.mkdir()
            for name in LINKED:
                if (REPO / name).exists():
                    (work / name).symlink_to(REPO / name)
            self.workspaces[page] = work
        return self.workspaces[page]

    def placeholder(self, builder):
        """The stand-in's path: the folder ``_build_<builder>`` filled, or the path it returned."""
        if builder not in self.built:
            target = self.root / "placeholders" / builder
            target.mkdir(parents=True)
            self.built[builder] = globals()[f"_build_{builder}"](target) or target
        return self.built[builder]

    def shell(self, page, script):
        """``script`` run by bash in ``page``'s working directory as its blocks run (for a page
        check's own commands); the finished process, whatever its exit status."""
        return subprocess.run(["bash", "-c", script], cwd=self.workspace(page), env=_environment(),
                              capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S)

    def run(self, block):
        work = self.workspace(block.page)
        scripts = [shrink(text, self.placeholder) for text in block.setup] + [shrink(block.text, self.placeholder)]
        for number, script in enumerate(scripts):
            kind = "bash" if number < len(scripts) - 1 else block.language
            self._run_one(work, block, kind, script, setup=number < len(scripts) - 1)

    def _run_one(self, work, block, kind, script, setup):
        stem = f"block_{block.line}" + ("_setup" if setup else "")
        if kind == "bash":
            path = work / f"{stem}.sh"
            path.write_text(BASH_PRELUDE + script + BASH_EPILOGUE)
            command = ["bash", str(path)]
        else:
            path = work / f"{stem}.py"
            path.write_text(script)
            command = [str(REPO / ".venv" / "bin" / "python"), str(path)]
        try:
            done = subprocess.run(command, cwd=work, env=_environment(), capture_output=True, text=True,
                                  timeout=BLOCK_TIMEOUT_S)
        except subprocess.TimeoutExpired as err:
            pytest.fail(f"{block.name}: still running after {BLOCK_TIMEOUT_S} s:\n{script}\n{_tail(err.stdout)}")
        if done.returncode != 0:
            what = "its doc-test setup" if setup else "the block"
            pytest.fail(
                f"{block.name}: {what} exited with {done.returncode}, as run (in {work}):\n{script}\n"
                f"--- output (last lines) ---\n{_tail(done.stdout + done.stderr)}"
            )
        if not setup:
            self.outputs.setdefault(block.page, []).append(done.stdout)


def _environment():
    """The environment a block (or a page check's command) runs in: this one with the tiny sizes
    of :data:`ENVIRONMENT`, the repository's ``.venv/bin`` first on ``PATH``, no ``PYTHONPATH``,
    and a free port for torchrun."""
    env = {**os.environ, **ENVIRONMENT, "PET_MASTER_PORT": str(_free_port())}  # torchrun's default port
    env["PATH"] = f"{REPO / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env.pop("PYTHONPATH", None)
    return env


def _free_port():
    """A port no process listens on now: torchrun's default (29500) would clash with a
    distributed test running at the same time in another pytest-xdist worker."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _tail(text, chars=6000):
    text = text or ""
    return text if isinstance(text, str) and len(text) <= chars else "..." + str(text)[-chars:]


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """The pages' working directories. The recipes run ``scripts/setup_env.sh``, which reinstalls
    when ``.venv``'s stamp is stale; from a working directory that would point the editable
    install there, so a stale stamp stops the test before anything runs."""
    stamp = REPO / ".venv" / ".requirements.sha256"
    wanted = hashlib.sha256((REPO / "requirements.txt").read_bytes() + (REPO / "pyproject.toml").read_bytes())
    if not stamp.is_file() or stamp.read_text().strip() != wanted.hexdigest():
        pytest.fail(".venv is not up to date with requirements.txt/pyproject.toml: run bash scripts/setup_env.sh "
                    "(bash scripts/test.sh does) before the doc blocks")
    return Pages(tmp_path_factory.mktemp("doc_pages"))


def run_block(block, pages, record_property):
    """Runs one block; what happened is recorded as the test's ``doc_block`` property, which
    ``tests/conftest.py`` prints as a table at the end of the session."""
    if block.skip:
        record_property("doc_block", f"skipped: {block.skip}")
        pytest.skip(f"{block.name}: {block.skip}")
    if block.page in pages.failed:
        record_property("doc_block", "not run (an earlier block of the page failed)")
        pytest.fail(f"{block.name}: not run, {pages.failed[block.page]} failed before it")
    started = time.perf_counter()
    pages.failed[block.page] = block.name
    record_property("doc_block", "failed")
    pages.run(block)
    del pages.failed[block.page]
    record_property("doc_block", f"ran in {time.perf_counter() - started:.0f} s")


def page_tests(page):
    """``TestPage_<page>``: the blocks of ``page``, in order. One class a page, so that
    ``pytest -n 2 --dist loadscope`` (scripts/test.sh) runs a page's blocks in one process."""
    blocks = [block for block in BLOCKS if block.page == page]

    @pytest.mark.e2e
    class Page:
        @pytest.mark.parametrize("block", blocks, ids=[block.name for block in blocks])
        def test_block_runs(self, block, pages, record_property):
            run_block(block, pages, record_property)

    if page in PAGE_CHECKS:
        def test_what_the_page_wrote(self, pages):
            """After the page's blocks (this method comes after them in the class)."""
            ran = [block for block in blocks if not block.skip]
            if page in pages.failed or len(pages.outputs.get(page, [])) != len(ran):
                pytest.fail(f"{page}: not checked, its blocks did not all run")
            PAGE_CHECKS[page](pages.workspace(page), pages.outputs[page], lambda script: pages.shell(page, script))

        Page.test_what_the_page_wrote = test_what_the_page_wrote

    Page.__name__ = Page.__qualname__ = "TestPage_" + re.sub(r"\W", "_", page)
    return Page


for _page in dict.fromkeys(block.page for block in BLOCKS):
    _tests = page_tests(_page)
    globals()[_tests.__name__] = _tests


def test_every_page_with_commands_is_found():
    pages = {block.page for block in BLOCKS}
    assert "README.md" in pages
    assert all(block.text.strip() for block in BLOCKS)


def test_substitutions_shrink_a_recipe_line():
    line = "ARCH=prophetnet_summ_base MAX_UPDATE=125000 bash scripts/prophetnet/pretrain.sh"
    assert shrink(line, None) == (
        "ARCH=prophetnet_summ_tiny MAX_UPDATE=1 ARCH=prophetnet_summ_tiny bash scripts/prophetnet/pretrain.sh"
    )
    demo = "MODEL=zcodepp bash scripts/run_demo.sh"
    assert shrink(demo, None) == "MODEL=zcodepp ARCH=zcodepp_tiny bash scripts/run_demo.sh"
    assert shrink("python -m preprocess.prepare --corpus wiki --vocab-size 32000", None) == (
        f"python -m preprocess.prepare --limit {LIMIT} --corpus wiki --vocab-size 1000"
    )
    assert shlex.split(shrink("fairseq-train data --max-epoch 60", None)) == [
        "fairseq-train", "--max-update", "1", "data", "--max-epoch", "1"]


# ---------------------------------------------------------------- placeholders


def _build_pair_corpus(target):
    """A user corpus directory ({train,valid,test}.{source,target}) cut from ACLSum, named with a
    space (``my corpus``: names derived from it must survive); each source starts with three
    sentences naming it (``Own document 2 of test. ...``), so that LEAD-3 shows which sources
    it read (``page_checks.check_readme``)."""
    from fairseq_ext.data import load_aclsum

    corpus = target / "my corpus"
    corpus.mkdir()
    for split in ("train", "valid", "test"):
        data = load_aclsum(split, LIMIT)
        sources = [f"Own document {i} of {split}. It has a second sentence. And a third one. " + source
                   for i, source in enumerate(data.sources)]
        (corpus / f"{split}.source").write_text("".join(s + "\n" for s in sources), encoding="utf-8")
        (corpus / f"{split}.target").write_text("".join(t + "\n" for t in data.targets), encoding="utf-8")
    return corpus


def _build_hf_deberta_v3(target):
    """A randomly initialized HF DeBERTa-v3 of a tiny size with the released checkpoints'
    settings (epsilon 1e-7, 256 buckets, max distance -1, p2c|c2p), saved as a released
    checkpoint directory is laid out."""
    import torch
    from transformers import DebertaV2Config, DebertaV2Model

    config = DebertaV2Config(
        vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=512, relative_attention=True, position_buckets=256, max_relative_positions=-1,
        pos_att_type=["p2c", "c2p"], share_att_key=True, norm_rel_ebd="layer_norm", layer_norm_eps=1e-7,
        hidden_act="gelu", type_vocab_size=0, position_biased_input=False,
    )
    torch.manual_seed(0)
    DebertaV2Model(config).save_pretrained(target)


def _build_hf_prophetnet(target):
    """A randomly initialized HF ProphetNet of prophetnet_summ_tiny's size with BERT-uncased's
    WordPiece vocabulary (MiniLM's), saved as a released checkpoint directory is laid out."""
    from prophetnet_oracle import tiny_hf_prophetnet

    tiny_hf_prophetnet(target)
