"""The ``files2rouge`` entry point of installs made before it moved to
:mod:`fairseq_ext.cli.files2rouge` (a shared ``.venv`` keeps the old console script until
``scripts/setup_env.sh`` reinstalls)."""

from ..cli.files2rouge import main  # noqa: F401
