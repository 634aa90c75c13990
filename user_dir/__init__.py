"""The fairseq face of the plugin: ``--user-dir user_dir`` imports this package.

Importing it makes fairseq's checkpoints load under torch's ``weights_only=True`` and
registers the tasks, criterions, models and architectures below.
"""

from fairseq_ext import checkpoint as _checkpoint

_checkpoint.install()

from . import criterions, models, tasks  # noqa: E402,F401  (registration side effects)
from .hub import SummarizationHubInterface, from_pretrained  # noqa: E402,F401
