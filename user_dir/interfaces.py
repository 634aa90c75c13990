"""What the plugin's tasks, criterions and models ask of each other, one class per contract: the
provider inherits it and the caller checks ``isinstance`` when it is built, so a wrong pairing
fails at once naming both.

====================================  ============================  ======================================
contract                              provided by                   asked by
====================================  ============================  ======================================
:class:`InitFromPretrained`           model ``s2s_ft``              every summarization task
:class:`JointRowTask`                 task ``transformer_sm``       model and criterion ``transformer_sm``
:class:`ReplacedTokenDetectionTask`   task ``zcodepp_pretraining``  criterion ``zcodepp_joint``
:class:`ReplacedTokenDetectionModel`  model ``zcodepp``             task ``zcodepp_pretraining``
====================================  ============================  ======================================
"""

from typing import List


class InitFromPretrained:
    """A model that may start training from released weights named in its own config (s2s-ft's
    ``--init-from-hf``): a task calls :meth:`init_from_pretrained` right after building a model to
    be trained, never for one built from a checkpoint."""

    def init_from_pretrained(self) -> None:
        """Load the released weights the config names (nothing when it names none)."""
        raise NotImplementedError


class JointRowTask:
    """A task whose samples are Transformer-SM's joint rows: right-padded articles ``<s> a..``
    as ``src_tokens`` and ``<delim> s..`` as ``prev_output_tokens`` over one joined dictionary."""

    delimiter_index: int
    """Index of ``<delim>`` in the joined dictionary."""

    epoch: int
    """The current training epoch (1 before training; updated by ``begin_epoch``)."""


class ReplacedTokenDetectionTask:
    """A task whose samples feed phase-one pre-training: ``net_input``/``target`` for the
    corrupted spans and ``sample["pretraining"]`` (``original``, ``mlm_source``, ``masked``)
    for the generator and the discriminator."""

    special_ids: List[int]
    """Symbols the generator must never sample as replacements (padding, ``<mask>``, sentinels, ...)."""


class ReplacedTokenDetectionModel:
    """A model with an MLM generator and a replaced-token discriminator (Z-Code++ phase one)."""

    def has_generator(self) -> bool:
        """Whether this instance holds the generator (pre-training) or not (later phases)."""
        raise NotImplementedError

    def generator_logits(self, tokens, masked):
        """MLM logits (M, V) of the generator at the masked slots (B, T) of ``tokens``."""
        raise NotImplementedError

    def discriminator_logits(self, tokens):
        """Replaced-token logits (B, T) of the discriminator over ``tokens`` (B, T)."""
        raise NotImplementedError
