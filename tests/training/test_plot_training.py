"""scripts/plot_training.py: fairseq JSON log lines -> loss and ROUGE series -> a PNG."""

import importlib.util

import pytest

from harness import REPO

spec = importlib.util.spec_from_file_location("plot_training", REPO / "scripts" / "plot_training.py")
plot_training = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plot_training)

# fairseq-train --log-format json output (two epochs, --eval-rouge), as fairseq 0.12.3 prints it
LOG = """\
2026-12-01 10:16:15 | INFO | fairseq_cli.train | task: AbstractiveSummarizationTask
2026-12-01 10:16:17 | INFO | train_inner | {"epoch": 1, "update": 0.5, "loss": "8.98", "nll_loss": "8.98", "num_updates": "2", "lr": "0.001"}
2026-12-01 10:16:19 | INFO | train_inner | {"epoch": 1, "update": 1.0, "loss": "8.968", "nll_loss": "8.968", "num_updates": "4", "lr": "0.001"}
2026-12-01 10:16:31 | INFO | valid | {"epoch": 1, "valid_loss": "8.941", "valid_rouge1": "10.5", "valid_rouge2": "1.25", "valid_rougeL": "9", "valid_num_updates": "4"}
2026-12-01 10:16:31 | INFO | train | {"epoch": 1, "train_loss": "8.974", "train_nll_loss": "8.974", "train_num_updates": "4"}
2026-12-01 10:16:35 | INFO | train_inner | {"epoch": 2, "update": 2.0, "loss": "8.86", "num_updates": "8"}
2026-12-01 10:16:37 | INFO | valid | {"epoch": 2, "valid_loss": "8.887", "valid_rouge1": "12", "valid_rouge2": "2", "valid_rougeL": "10.75", "valid_num_updates": "8", "valid_best_rougeL": "10.75"}
2026-12-01 10:16:37 | INFO | train | {"epoch": 2, "train_loss": "8.889", "train_num_updates": "8"}
2026-12-01 10:16:38 | INFO | fairseq_cli.train | done training in 22.1 seconds
"""


def test_read_log_series():
    series = plot_training.read_log(LOG.splitlines())
    assert series["train_inner"] == [(2, 8.98), (4, 8.968), (8, 8.86)]
    assert series["train"] == [(4, 8.974), (8, 8.889)]
    assert series["valid"] == [(4, 8.941), (8, 8.887)]
    assert series["valid_rougeL"] == [(4, 9.0), (8, 10.75)] and series["valid_rouge2"] == [(4, 1.25), (8, 2.0)]
    assert "valid_best_rougeL" not in series


def test_simple_format_log_is_refused_with_a_hint(tmp_path, capsys):
    log = tmp_path / "train.log"
    log.write_text("2026-12-01 | INFO | train_inner | epoch 001:      1 / 4 loss=8.978, num_updates=1\n")
    with pytest.raises(SystemExit):
        plot_training.main([str(log), "--out", str(tmp_path / "x.png")])
    assert "--log-format json" in capsys.readouterr().err


def test_main_writes_a_png(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(LOG)
    out = tmp_path / "training.png"
    assert plot_training.main([str(log), "--out", str(out), "--title", "bart"]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


def test_minutes_axis_reads_fairseqs_time_stamps(tmp_path):
    """``--x minutes``: each point at the minutes since the log's first line (10:16:15)."""
    series = plot_training.read_log(LOG.splitlines(), x="minutes")
    assert series["train_inner"] == [(0.03, 8.98), (0.07, 8.968), (0.33, 8.86)]
    assert series["valid_rougeL"] == [(0.27, 9.0), (0.37, 10.75)]
    with pytest.raises(ValueError, match="choose one of"):
        plot_training.read_log(LOG.splitlines(), x="epochs")
    log = tmp_path / "train.log"
    log.write_text(LOG)
    out = tmp_path / "curve.png"
    assert plot_training.main([str(log), "--out", str(out), "--x", "minutes"]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
