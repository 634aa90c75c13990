"""HF DeBERTa-v2/v3 -> Z-Code++ encoder converter: it reads the HF config, converts what
released DeBERTa-v3 checkpoints use (checked by the parity tests of tests/zcodepp/test_attention.py),
refuses every configuration the encoder does not compute, naming the field, and refuses to load
into an encoder built with other options."""

import pytest
import torch
from fairseq import checkpoint_utils
from transformers import DebertaV2Model

from deberta_oracle import PAD, PARITY_CONFIGS, build_encoder, encode, hf_config, random_tokens
from fairseq_ext.cli.convert import main
from fairseq_ext.convert.zcodepp import convert_config, convert_state_dict, load_deberta_v2
from parity import perturb_parameters

# each of these has exactly the parameters of a supported model, or computes another function
UNSUPPORTED = {
    "pos_att_type": ["c2p"],
    "position_buckets": -1,
    "hidden_act": "silu",
    "share_att_key": False,
    "norm_rel_ebd": "none",
    "relative_attention": False,
    "position_biased_input": True,
    "type_vocab_size": 2,
    "embedding_size": 16,
    "conv_kernel_size": 3,
}


@pytest.mark.parametrize("field", sorted(UNSUPPORTED))
def test_unsupported_configs_are_refused_by_name(field):
    config = hf_config(**{field: UNSUPPORTED[field]})
    with pytest.raises(ValueError, match=field):
        convert_config(config)
    with pytest.raises(ValueError, match=field):
        convert_state_dict({}, config)


def test_c2p_only_has_the_parameters_of_a_supported_model():
    """Why the conversion needs the config: the state dicts have the same keys and shapes."""
    supported = DebertaV2Model(hf_config()).state_dict()
    c2p_only = DebertaV2Model(hf_config(pos_att_type=["c2p"])).state_dict()
    assert {k: v.shape for k, v in supported.items()} == {k: v.shape for k, v in c2p_only.items()}


def test_released_v3_options():
    options = convert_config(hf_config(**PARITY_CONFIGS["v3"]))
    assert options["relative_buckets"] == 256 and options["relative_max_distance"] == 512
    assert options["encoder_layer_norm_eps"] == 1e-7 and options["activation_fn"] == "gelu"
    assert convert_config(hf_config(hidden_act="gelu_new"))["activation_fn"] == "gelu_accurate"


@pytest.mark.parametrize(
    "option,value,flag",
    [("relative_max_distance", 64, "--relative-max-distance"),
     ("encoder_layer_norm_eps", 1e-7, "--encoder-layer-norm-eps"),
     ("activation_fn", "gelu_accurate", "--activation-fn"),
     ("encoder_attention_heads", 2, "--encoder-attention-heads")],
)
def test_loading_into_an_encoder_built_otherwise_is_refused(option, value, flag):
    """The parameters would load, the function would differ: the loader names the flag."""
    hf = DebertaV2Model(hf_config()).eval()
    encoder = build_encoder(**{option: value})
    with pytest.raises(ValueError, match=flag):
        load_deberta_v2(encoder, hf.state_dict(), hf.config)


def test_cli_reads_config_json_and_writes_flags(tmp_path):
    hf = perturb_parameters(DebertaV2Model(hf_config(**PARITY_CONFIGS["unusual"])).eval(), seed=2)
    hf.save_pretrained(tmp_path / "hf")
    path = main(["zcodepp", "--hf-dir", str(tmp_path / "hf"), "--out", str(tmp_path / "out")])
    flags = (tmp_path / "out" / "args.txt").read_text().split()
    options = dict(zip(flags[::2], flags[1::2]))
    assert options["--arch"] == "zcodepp_base"
    assert options["--relative-buckets"] == "8" and options["--relative-max-distance"] == "40"
    assert options["--encoder-layer-norm-eps"] == "0.001" and options["--activation-fn"] == "gelu_accurate"
    encoder = build_encoder(relative_buckets=8, relative_max_distance=40, encoder_layer_norm_eps=1e-3,
                            activation_fn="gelu_accurate")
    checkpoint_utils.load_pretrained_component_from_model(encoder, str(path))  # fairseq's own partial load
    tokens = random_tokens([50, 3], generator=torch.Generator().manual_seed(2))
    real = tokens.ne(PAD)
    with torch.no_grad():
        expected = hf(tokens, attention_mask=real.long()).last_hidden_state
        torch.testing.assert_close(encode(encoder, tokens)[real], expected[real], atol=1e-5, rtol=0)


def test_cli_refuses_a_folder_without_config(tmp_path):
    DebertaV2Model(hf_config()).save_pretrained(tmp_path / "hf")
    (tmp_path / "hf" / "config.json").unlink()
    with pytest.raises(FileNotFoundError, match="config.json"):
        main(["zcodepp", "--hf-dir", str(tmp_path / "hf"), "--out", str(tmp_path / "out")])
