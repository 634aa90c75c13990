"""Moved to :mod:`fairseq_ext.compat.checkpoint`; this name stays only for
``scripts/run_demo.sh`` (edited on another branch), and goes once it imports the new path."""

from .compat.checkpoint import safe_load  # noqa: F401
