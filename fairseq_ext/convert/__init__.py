"""Converters from released weights to the plugin's models: one reader, one rule for embedding
rows, one validation of the config beside the weights, one output format; each family adds
its key map.

    python -m fairseq_ext.cli.convert FAMILY --help
    python -m fairseq_ext.cli.convert prophetnet --hf-dir DIR --out OUT      # HF ProphetNet
    python -m fairseq_ext.cli.convert bart_ls --bart BART.pt --dict DICT --out OUT   # fairseq BART
    python -m fairseq_ext.cli.convert s2s_ft --hf-dir DIR --dict DICT --out OUT      # HF BERT/RoBERTa
    python -m fairseq_ext.cli.convert transformer_sm --hf-dir DIR --out OUT  # HF GPT / GPT-2
    python -m fairseq_ext.cli.convert zcodepp --hf-dir DIR --out OUT         # HF DeBERTa-v2/v3 encoder

* :mod:`.read`: a local Hugging Face folder or a fairseq checkpoint, through
  :func:`fairseq_ext.compat.checkpoint.safe_load` (nothing downloaded, no code run from a file);
* :mod:`.validate`: the refusal, by field, of configs the converted model would not compute;
* :mod:`.embeddings`: the one rule for token-embedding rows (the dictionary decides);
* :mod:`.write`: the output, ``OUT/model.pt`` (a fairseq checkpoint), ``OUT/args.txt``,
  ``OUT/dict*.txt``;
* one module per family, with one protocol: ``convert_config(config, ...)`` (the released
  config -> our model options, refusing what we would compute differently; BART-LS keeps
  BART's own), ``convert_state_dict(state, config, ...)`` (the key map), checked by
  :func:`.validate.check_state` where a model is built, and ``add_args``/``convert`` for the
  command, :mod:`fairseq_ext.cli.convert`.

Nothing here imports ``user_dir`` or installs the plugin's fairseq fixes.
"""
