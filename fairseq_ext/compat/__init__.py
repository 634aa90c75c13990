"""The seam with fairseq 0.12.3 and torch: everything here depends on their internals.

==================  ==========================================================================
``fixes``            the patches (one wrapper per fairseq function, install / undo) and helpers
``distributed``      torchrun, CPU spawn and gloo, DDP on CPU, frozen modules, resuming
``generation``       n-gram blocking, beam size 1, the last batch, fairseq-interactive's input
``flags``            on-by-default booleans, ``--bf16`` without ``--tpu``, one-line CLI errors
``renamed_flags``    old flag names in stored configs, fields added since
``checkpoint``       ``torch.load(weights_only=True)`` and what fairseq ``eval()``s
``config_schema``    a checkpoint's configuration validated against fairseq's registries
``archives``         model archives extracted as data, no fetch while loading
==================  ==========================================================================

An upgrade of fairseq or torch looks here and nowhere else: rerun
``tests/compat/test_fairseq_fixes.py`` and ``tests/compat/test_distributed_fixes.py``
(each fix against fairseq's own function), drop the rows whose bug is gone, and check the
``target`` of the rest (``FIXES``), the ``eval()`` sites of :mod:`.checkpoint` and the
registries of :mod:`.config_schema`.
"""

from .fixes import (
    FIXES,
    FIXES_BY_NAME,
    HELPERS,
    PATCHES,
    PROCESS_WIDE,
    applied,
    install,
    original,
    unchanged,
    uninstall,
)

__all__ = ["FIXES", "FIXES_BY_NAME", "HELPERS", "PATCHES", "PROCESS_WIDE", "applied", "install", "original",
           "unchanged", "uninstall"]
