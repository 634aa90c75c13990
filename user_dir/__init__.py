"""The fairseq face of the plugin: ``--user-dir user_dir`` imports this package.

Importing it makes fairseq's checkpoints load under torch's ``weights_only=True``, stops
fairseq 0.12.3 from dropping the last batch (:mod:`fairseq_ext.fairseq_fixes`), and
registers the tasks, criterions, models and architectures below.
"""

from fairseq_ext import checkpoint as _checkpoint
from fairseq_ext import fairseq_fixes as _fairseq_fixes

_checkpoint.install()
_fairseq_fixes.install()

from . import criterions, models, tasks  # noqa: E402,F401  (registration side effects)
from .hub import SummarizationHubInterface, from_pretrained  # noqa: E402,F401
