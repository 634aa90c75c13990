"""Converters from released weights to the plugin's models (``python -m fairseq_ext.cli.convert
FAMILY --hf-dir DIR --out OUT``; docs/convert.md): one reader (:mod:`.read`, through
:func:`fairseq_ext.compat.checkpoint.safe_load`), one rule for embedding rows
(:mod:`.embeddings`), one validation of the config beside the weights (:mod:`.validate`), one
output format (:mod:`.write`), and one protocol per family module: ``convert_config(config,
...)`` and ``convert_state_dict(state, config, ...)``, checked by
:func:`.validate.check_state` where a model is built. Nothing here imports ``user_dir``.
"""
