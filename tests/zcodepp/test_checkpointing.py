"""``--checkpoint-activations`` in the Z-Code++ encoder: the same gradients as the plain path
(every weight perturbed; FiE local layers, chunked global attention nested inside)."""

import pytest

from activation_checkpointing import assert_same_gradients, assert_trained, build, dictionary_dir, model_pair

ARCH = "zcodepp_tiny"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return dictionary_dir(tmp_path_factory.mktemp("zcodepp_dict"))


@pytest.mark.parametrize("dropout", ["0", "0.1"])
@pytest.mark.parametrize("fie", [[], ["--fie-chunk-size", "8"]])
def test_checkpointed_encoder_gradients_equal_plain(data_dir, dropout, fie):
    flags = ["--share-all-embeddings", "--dropout", dropout, "--attention-dropout", dropout,
             "--attention-chunk-size", "7", *fie]
    plain, checkpointed = model_pair(data_dir, ARCH, flags)
    assert checkpointed.encoder.checkpoint_activations and not plain.encoder.checkpoint_activations
    assert_same_gradients(plain, checkpointed)


def test_offload_activations_is_refused(data_dir):
    with pytest.raises(ValueError, match="--offload-activations"):
        build(data_dir, ARCH, "--share-all-embeddings", "--offload-activations")


@pytest.mark.e2e
def test_fairseq_train_with_checkpoint_activations(tmp_path):
    """Two updates of fairseq-train on long ACLSum papers with --checkpoint-activations, FiE and
    chunked global attention."""
    from harness import prepare_corpus, train

    data = prepare_corpus("aclsum_long", tmp_path / "data", limit=2, vocab_size=300)
    save = train(data, tmp_path / "ckpt", ARCH, [
        "--checkpoint-activations", "--fie-chunk-size", "64", "--attention-chunk-size", "128",
        "--max-source-positions", "1024", "--batch-size", "1", "--max-update", "2",
        "--required-batch-size-multiple", "1",
    ])
    assert_trained(save, updates=2)
