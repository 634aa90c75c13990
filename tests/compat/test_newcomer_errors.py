"""The errors a newcomer meets first end in one line that says what to pass: an ``--arch``
typo suggests the plugin's closest architectures, a data path one level above ``bin/`` names
the ``bin/`` inside it (fairseq-train, fairseq-generate and every CLI that parses through
``options.parse_args_and_arch``)."""

import pytest
from fairseq import options
from fairseq.models import ARCH_CONFIG_REGISTRY

import user_dir  # noqa: F401  (registers the plugin and installs its fixes)
from fairseq_ext.compat.flags import data_dir_message, unknown_arch_message


def _dictionary(folder):
    folder.mkdir(parents=True)
    (folder / "dict.source.txt").write_text("a 1\n")


TYPOS = [("bart_summ_smal", "bart_summ_small"), ("s2s_ft_minilm", "s2s_ft_minilm_l6_h384"),
         ("prophetnet_sum_tiny", "prophetnet_summ_tiny"), ("zcodep_base", "zcodepp_base")]


@pytest.mark.parametrize("typo, meant", TYPOS)
def test_an_arch_typo_suggests_the_plugins_closest_names(typo, meant):
    message = unknown_arch_message(typo, ARCH_CONFIG_REGISTRY)
    suggestion = message.split("did you mean ", 1)[1].split("?")[0]
    assert meant in suggestion.split(" or ")
    assert "wav2vec" not in message and "transformer_iwslt_de_en" not in message  # the plugin's own only
    assert len(message) < 1000


def test_an_arch_nothing_is_close_to_lists_the_plugins_without_a_guess():
    message = unknown_arch_message("qqqq", ARCH_CONFIG_REGISTRY)
    assert "did you mean" not in message and "bart_ls_tiny" in message


def test_the_cli_stops_with_the_suggestion_and_status_2(tmp_path, capsys):
    _dictionary(tmp_path / "bin")
    parser = options.get_training_parser()
    with pytest.raises(SystemExit) as stopped:
        options.parse_args_and_arch(parser, [str(tmp_path / "bin"), "--user-dir", "user_dir", "--task",
                                             "abstractive_summarization", "--arch", "bart_summ_smal"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "did you mean bart_summ_small" in err and len(err) < 1000


@pytest.mark.parametrize("given", ["{data}", "{data}/", "{data}:{data}"])
def test_a_data_dir_one_level_off_names_the_bin_inside(tmp_path, capsys, given):
    data = tmp_path / "aclsum"
    _dictionary(data / "bin")
    assert "aclsum/bin" in data_dir_message(given.format(data=data))
    parser = options.get_validation_parser()
    with pytest.raises(SystemExit) as stopped:
        options.parse_args_and_arch(parser, [given.format(data=data), "--user-dir", "user_dir",
                                             "--task", "abstractive_summarization"])
    assert stopped.value.code == 2
    assert f"the binarized data are in {data}" in capsys.readouterr().err


def test_right_or_unrelated_data_paths_are_left_alone(tmp_path):
    _dictionary(tmp_path / "right")
    (tmp_path / "empty").mkdir()
    for path in (tmp_path / "right", tmp_path / "empty", tmp_path / "missing", ""):
        assert data_dir_message(str(path)) is None


def test_the_hub_names_the_bin_inside_too(tmp_path):
    from user_dir import from_pretrained

    _dictionary(tmp_path / "data" / "bin")
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "checkpoint_best.pt").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match="the binarized data are in .*data/bin"):
        from_pretrained(str(tmp_path / "model"), data_name_or_path=str(tmp_path / "data"))
