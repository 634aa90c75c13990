"""The fairseq face of the plugin: ``--user-dir user_dir`` imports this package.

Importing it applies the process-wide fairseq 0.12.3 fixes of the table
:data:`fairseq_ext.compat.FIXES` (checkpoints load under torch's ``weights_only=True``
through the guarded loader, their configuration validated as data; archives extracted member
by member; no fetch while loading; invalid UTF-8 on fairseq-interactive's input repaired; the dropped last batch; torchrun, spawn, gloo and DDP on CPU;
frozen modules under DDP; ``--bf16`` without ``--tpu``; resuming distributed runs), and
registers the tasks, criterions, models and architectures below. This is the one place that
installs the fixes. fairseq-train imports this package before it parses arguments or starts
processes, and processes it spawns import it again before they build a trainer.
"""

from fairseq_ext import compat as _compat
from fairseq_ext.allocator import keep_freed_memory as _keep_freed_memory

_compat.install()
_keep_freed_memory()  # decoding's per-step buffers stay in the heap (fairseq_ext/allocator.py)

from . import criterions, models, tasks  # noqa: E402,F401  (registration side effects)
from .hub import SummarizationHubInterface, from_pretrained  # noqa: E402,F401
