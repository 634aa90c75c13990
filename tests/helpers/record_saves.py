"""``fairseq-train`` that also records which process writes which checkpoint file.

Used by ``tests/training/test_distributed_e2e.py`` under torchrun: every call of fairseq's
``checkpoint_utils.torch_persistent_save`` (the one place a trainer writes a checkpoint) appends
the file name to ``$RECORD_SAVES/rank<RANK>.txt``, then writes as usual.

    RECORD_SAVES=/tmp/saves torchrun --nproc_per_node 2 tests/helpers/record_saves.py DATA --user-dir user_dir ...
"""

import os

from fairseq import checkpoint_utils
from fairseq_cli import train


def main():
    record = os.path.join(os.environ["RECORD_SAVES"], f"rank{os.environ.get('RANK', '0')}.txt")
    write = checkpoint_utils.torch_persistent_save

    def recording_write(obj, filename, *args, **kwargs):
        with open(record, "a", encoding="utf-8") as f:
            f.write(f"{filename}\n")
        return write(obj, filename, *args, **kwargs)

    checkpoint_utils.torch_persistent_save = recording_write
    train.cli_main()


if __name__ == "__main__":
    main()
