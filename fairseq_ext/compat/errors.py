"""The errors of checkpoint loading: each message names the file and the reason, on one line."""


class CheckpointError(RuntimeError):
    """A checkpoint could not be loaded; the message names the file and the reason."""


class UntrustedCheckpointError(CheckpointError):
    """The checkpoint would import or call something, or holds code for fairseq to ``eval()``."""


class CorruptCheckpointError(CheckpointError):
    """The checkpoint is truncated, corrupt, or not a torch checkpoint at all."""


class ModelFileRefused(UntrustedCheckpointError):
    """A model file that holds more than a model's description (message: file and field)."""
