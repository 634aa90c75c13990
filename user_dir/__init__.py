"""The fairseq face of the plugin: ``--user-dir user_dir`` imports this package.

Importing it installs the fairseq 0.12.3 fixes (:mod:`fairseq_ext.compat`; nothing else installs
them) and registers the tasks, criterions, models and architectures below. fairseq-train imports
it before it parses arguments or starts processes; processes it spawns import it again before
they build a trainer.
"""

from fairseq_ext import compat as _compat
from fairseq_ext.allocator import keep_freed_memory as _keep_freed_memory

_compat.install()
_keep_freed_memory()  # decoding's per-step buffers stay in the heap (fairseq_ext/allocator.py)

from . import criterions, models, tasks  # noqa: E402,F401  (registration side effects)
from .hub import SummarizationHubInterface, from_pretrained  # noqa: E402,F401
