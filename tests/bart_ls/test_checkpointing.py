"""``--checkpoint-activations`` in the BART-LS encoder: the same gradients as the plain path for
every attention type (every weight perturbed, pooling layers included)."""

import pytest

from activation_checkpointing import assert_same_gradients, assert_trained, dictionary_dir, model_pair

ARCH = "bart_ls_tiny"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return dictionary_dir(tmp_path_factory.mktemp("bart_ls_dict"))


@pytest.mark.parametrize("dropout", ["0", "0.1"])
@pytest.mark.parametrize("attention", ["block", "overlapping", "global", "full"])
def test_checkpointed_encoder_gradients_equal_plain(data_dir, attention, dropout):
    pooling = "0" if attention == "full" else "1"  # full attention is BART's encoder, without pooling
    flags = ["--encoder-attention", attention, "--block-size", "8", "--global-tokens", "2", "--pooling-layers", pooling,
             "--pooling-kernel", "4", "--pooling-stride", "2", "--pooling-padding", "1",
             "--dropout", dropout, "--attention-dropout", dropout]
    plain, checkpointed = model_pair(data_dir, ARCH, flags)
    assert all(layer.checkpoint_activations for layer in checkpointed.encoder.layers)
    assert not any(layer.checkpoint_activations for layer in plain.encoder.layers)
    assert_same_gradients(plain, checkpointed)


@pytest.mark.e2e
def test_fairseq_train_with_checkpoint_activations(tmp_path):
    """Two updates of fairseq-train on long ACLSum papers with --checkpoint-activations."""
    from harness import prepare_corpus, train

    data = prepare_corpus("aclsum_long", tmp_path / "data", limit=2, vocab_size=300)
    save = train(data, tmp_path / "ckpt", ARCH, [
        "--checkpoint-activations", "--encoder-attention", "overlapping", "--block-size", "64",
        "--pooling-layers", "1", "--max-source-positions", "1024", "--batch-size", "1", "--max-update", "2",
        "--required-batch-size-multiple", "1",
    ])
    assert_trained(save, updates=2)
