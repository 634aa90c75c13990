"""The fairseq fixes table (every entry documented, applied and undone to fairseq's very own
object, install idempotent, nothing installed by importing the library or running a
converter), n-gram blocking on CPU, and no batch left behind."""

import argparse
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from fairseq.data import data_utils
from fairseq.ngram_repeat_block import NGramRepeatBlock

import user_dir  # noqa: F401  (installs the fixes, keep_last_batch included, as --user-dir does)
from fairseq_ext import compat
from fairseq_ext.compat.fixes import ENVIRONMENT_VARIABLES, FIXES, PROCESS_WIDE, AllowlistFix, OfflineFix
from fairseq_ext.compat.generation import PrefixNGramRepeatBlock, fix_ngram_blocking
from harness import REPO

PAD = 1


def _buffer():
    # one hypothesis "</s> 5 6 5 6" at step 4, then padding up to max_len + 2
    return torch.LongTensor([[2, 5, 6, 5, 6] + [PAD] * 7])


def test_stock_cpu_blocker_bans_nothing_ours_bans_the_repeat():
    stock = NGramRepeatBlock(3, use_extension=False)(_buffer(), torch.zeros(1, 10), 1, 1, step=4)
    assert torch.isinf(stock).sum() == 0  # the fairseq 0.12 bug this module fixes
    ours = PrefixNGramRepeatBlock(3, use_extension=False)(_buffer(), torch.zeros(1, 10), 1, 1, step=4)
    # "5 6" was followed by "5": that trigram may not repeat
    assert torch.isinf(ours[0]).nonzero().flatten().tolist() == [5]


def test_fix_ngram_blocking_swaps_only_an_existing_blocker():
    class Generator:
        repeat_ngram_blocker = NGramRepeatBlock(3, use_extension=False)

    fixed = fix_ngram_blocking(Generator())
    assert isinstance(fixed.repeat_ngram_blocker, PrefixNGramRepeatBlock)
    assert fixed.repeat_ngram_blocker.no_repeat_ngram_size == 3

    class NoBlocking:
        repeat_ngram_blocker = None

    assert fix_ngram_blocking(NoBlocking()).repeat_ngram_blocker is None


@pytest.mark.parametrize("count,max_sentences,multiple", [(12, 8, 8), (100, 16, 8), (5, 8, 8), (17, 4, 3)])
def test_batch_by_size_keeps_every_index(count, max_sentences, multiple):
    indices = np.random.RandomState(0).permutation(count)
    batches = data_utils.batch_by_size(
        indices, lambda i: 10, max_sentences=max_sentences, required_batch_size_multiple=multiple
    )
    assert np.array_equal(np.concatenate(batches), indices)
    assert all(len(b) <= max_sentences for b in batches)
    # every batch but the last keeps fairseq's rule (a multiple of N, or less than N)
    assert all(len(b) % multiple == 0 or len(b) < multiple for b in batches[:-1])


def test_batch_by_size_with_token_budget_keeps_every_index():
    sizes = np.random.RandomState(1).randint(5, 50, size=30)
    batches = data_utils.batch_by_size(
        np.arange(30), lambda i: sizes[i], max_tokens=120, required_batch_size_multiple=8
    )
    assert sorted(np.concatenate(batches).tolist()) == list(range(30))


# ---------------------------------------------------------------- the table
def _target(fix):
    owner, attribute = fix._owner()
    return getattr(owner, attribute)


def _state():
    """Every object the process-wide fixes replace, torch's allowlist, and the environment
    variables they set."""
    variables = {v: os.environ.get(v) for v in ENVIRONMENT_VARIABLES}
    return ({fix.target: _target(fix) for fix in PROCESS_WIDE if fix.target}, torch.serialization.get_safe_globals(),
            variables)


def _same_state(a, b):
    """The same objects in place, the same allowlist (torch keeps it as a set: order varies),
    the same variables."""
    return (set(a[1]) == set(b[1]) and a[0].keys() == b[0].keys() and all(a[0][k] is b[0][k] for k in a[0])
            and a[2] == b[2])


@pytest.fixture
def bare_fairseq():
    """fairseq without any fix for the test, the process as it was afterwards."""
    with compat.unchanged():
        compat.uninstall()
        assert not any(fix.is_applied() for fix in PROCESS_WIDE)
        yield _state()


def test_every_entry_says_what_why_on_which_fairseq_and_how_it_is_applied():
    assert len({fix.name for fix in FIXES}) == len(FIXES)
    assert all(fix.process_wide for fix in compat.PATCHES) and not any(fix.process_wide for fix in compat.HELPERS)
    for fix in FIXES:
        assert fix.fixes and fix.why and "0.12.3" in fix.fairseq and fix.applied_by
        if fix.process_wide:
            assert fix.applied_by == "install()" and (fix.target is None) == isinstance(fix, (AllowlistFix, OfflineFix))
        else:
            assert callable(fix.function) and fix.target is None
            with pytest.raises(TypeError, match="per task"):
                fix.apply()


@pytest.mark.parametrize("fix", PROCESS_WIDE, ids=lambda f: f.name)
def test_each_fix_applied_then_undone_restores_fairseqs_own_object(fix, bare_fairseq):
    fix.apply()
    assert fix.is_applied() and not _same_state(_state(), bare_fairseq)
    after_first = _state()
    fix.apply()  # idempotent: the same replacement stays
    assert _same_state(_state(), after_first)
    fix.undo()
    assert not fix.is_applied() and _same_state(_state(), bare_fairseq)  # `is` fairseq's own
    fix.undo()  # undoing what is not applied changes nothing
    assert _same_state(_state(), bare_fairseq)


def test_one_wrapper_per_fairseq_attribute_undone_by_one_swap(bare_fairseq):
    targets = [fix.target for fix in PROCESS_WIDE if fix.target]
    assert len(targets) == len(set(targets))
    from fairseq.distributed import utils as distributed_utils

    stock = distributed_utils.call_main
    launch = compat.FIXES_BY_NAME["cpu_launch"]
    launch.apply()
    assert distributed_utils.call_main._fairseq_ext_fix == "cpu_launch"
    assert compat.original(distributed_utils.call_main) is stock
    launch.undo()
    assert distributed_utils.call_main is stock


def test_install_is_idempotent_and_uninstall_restores_everything(bare_fairseq):
    compat.install()
    installed = _state()
    assert all(fix.is_applied() for fix in PROCESS_WIDE)
    compat.install()
    assert _same_state(_state(), installed)
    compat.uninstall()
    assert _same_state(_state(), bare_fairseq)


def test_applied_puts_every_fix_in_place_for_a_block_only(bare_fairseq):
    with compat.applied():
        assert all(fix.is_applied() for fix in PROCESS_WIDE)
    assert _same_state(_state(), bare_fairseq)


def test_unchanged_restores_the_very_objects(bare_fairseq):
    compat.install()
    installed = _state()
    with compat.unchanged():
        compat.uninstall()
        compat.FIXES_BY_NAME["cpu_launch"].apply()
    assert _same_state(_state(), installed)


def _fresh_environment():
    """This process's environment without what the plugin's fixes set in it (a child inherits
    them): the environment of a user's shell."""
    return {k: v for k, v in os.environ.items() if k not in ENVIRONMENT_VARIABLES}


IMPORT_EVERYTHING = """
import importlib, pkgutil, sys
import fairseq_ext, preprocess
for package in (fairseq_ext, preprocess):
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if not module.name.endswith(".__main__"):  # a command, not a module to import
            importlib.import_module(module.name)
from fairseq_ext import compat
print("applied after importing the library:", [f.name for f in compat.PROCESS_WIDE if f.is_applied()])
import user_dir
print("applied after importing the plugin:", len([f for f in compat.PROCESS_WIDE if f.is_applied()]))
"""


@pytest.mark.e2e  # runs Python processes
def test_importing_the_library_installs_nothing_importing_the_plugin_installs_all():
    out = subprocess.run([sys.executable, "-c", IMPORT_EVERYTHING], cwd=REPO, capture_output=True, text=True,
                         check=True, env=_fresh_environment()).stdout
    assert "applied after importing the library: []" in out
    assert f"applied after importing the plugin: {len(PROCESS_WIDE)}" in out


CONVERT_PROPHETNET = """
import sys, torch
from transformers import ProphetNetConfig, ProphetNetForConditionalGeneration
from fairseq_ext import compat
from fairseq_ext.cli.convert import main as convert
tokens = ["[PAD]", "[unused0]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(30)]
hf, out = sys.argv[1], sys.argv[2]
with open(hf + "/vocab.txt", "w") as f:
    f.write("".join(t + "\\n" for t in tokens))
config = ProphetNetConfig(vocab_size=len(tokens), hidden_size=32, encoder_ffn_dim=64, decoder_ffn_dim=64,
    num_encoder_layers=1, num_decoder_layers=1, num_encoder_attention_heads=2, num_decoder_attention_heads=2,
    num_buckets=16, relative_max_distance=32, max_position_embeddings=64, pad_token_id=0, bos_token_id=3,
    eos_token_id=4, decoder_start_token_id=4)
ProphetNetForConditionalGeneration(config).save_pretrained(hf)
convert(["prophetnet", "--hf-dir", hf, "--out", out])
print("applied after converting:", [f.name for f in compat.PROCESS_WIDE if f.is_applied()])
state = torch.load(out + "/model.pt", weights_only=False)
print("relative_buckets:", state["args"].relative_buckets)
"""


@pytest.mark.e2e  # runs Python processes
def test_the_converter_leaves_no_fix_behind(tmp_path):
    (tmp_path / "hf").mkdir()
    result = subprocess.run([sys.executable, "-c", CONVERT_PROPHETNET, str(tmp_path / "hf"), str(tmp_path / "out")],
                            cwd=REPO, capture_output=True, text=True, env=_fresh_environment())
    assert result.returncode == 0, result.stderr[-3000:]
    assert "applied after converting: []" in result.stdout and "relative_buckets: 16" in result.stdout


def test_safe_load_leaves_the_allowlist_alone(tmp_path, bare_fairseq):
    """Without the plugin it allows fairseq's types for its own read only; with the plugin
    installed they stay allowed for every torch.load."""
    from fairseq_ext.compat.checkpoint import safe_load

    path = tmp_path / "ns.pt"
    torch.save({"args": argparse.Namespace(a=1)}, path)
    assert safe_load(path)["args"].a == 1
    assert argparse.Namespace not in torch.serialization.get_safe_globals()
    with compat.applied():
        assert safe_load(path)["args"].a == 1
        assert torch.load(path, weights_only=True)["args"].a == 1
