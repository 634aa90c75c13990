"""A model file is data on every entry point, proved by watching, not by listing sinks: each
hostile file of tests/helpers/hostile.py goes through fairseq-generate, -interactive, -validate,
fairseq-train (--restore-file, --finetune-from-model, --ema-seed-model), both hubs, two
converters and the export, in one process that records every write outside the run's folder,
every read of a device or FIFO, every network call, every new process and every import from
outside the installed packages, under an address-space cap (tests/helpers/audit_run.py). Nothing may be
recorded; a refusal is one line naming the file; a good file loads everywhere."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import hostile

LOADERS = ["generate", "interactive", "validate", "hub", "fairseq_hub"]
#: the command-line loaders set up their data before they read the file (a second a case): they
#: read one file of each kind, the hubs and converters all of them
CLI_LOADERS = ["generate", "interactive", "validate"]
ONE_OF_EACH_KIND = ["unreviewed-criterion", "bert-bpe-without-vocabulary", "paths-to-devices",
                    "ffn-unlike-the-weights", "thousands-of-layers", "expanded-weight", "list-where-a-weight-belongs",
                    "legacy-args-backslash-quote", "training-time-past-the-stop", "good"]
CONVERTERS = ["bart_ls_convert", "s2s_ft_convert", "export"]
TRAINERS = ["train_restore", "finetune", "ema_seed"]
#: hostile only to a loader: a converter keeps BART's text options as they are, and loading its
#: output refuses them
CONVERTERS_MAY_READ = {"legacy-args-backslash-quote"}
#: the files a training run reads beyond the weights (its optimizer, EMA, iterator and clock)
TRAINING_FILES = ["expanded-ema", "expanded-optimizer-moment", "no-extra-state", "huge-weight-decay",
                  "training-time-past-the-stop", "paths-to-devices"]


@pytest.fixture(scope="module")
def audit(bart_tiny_checkpoint, aclsum_bin, tmp_path_factory):
    work = tmp_path_factory.mktemp("audit")
    good_state = torch.load(bart_tiny_checkpoint, weights_only=True)
    files = hostile.make_all(good_state, work / "files")
    files["good"] = Path(bart_tiny_checkpoint)
    cases = [(entry, name) for name in files for entry in LOADERS + CONVERTERS
             if entry not in CLI_LOADERS or name in ONE_OF_EACH_KIND]
    cases += [(entry, name) for name in TRAINING_FILES + ["good"] for entry in TRAINERS]
    spec = {"data": str(aclsum_bin), "work": str(work / "runs"),
            "cases": [(entry, str(files[name])) for entry, name in cases]}
    (work / "spec.json").write_text(json.dumps(spec))
    run = subprocess.run([sys.executable, str(Path(__file__).parents[1] / "helpers" / "audit_run.py"),
                          str(work / "spec.json"), str(work / "result.json")],
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    results = json.loads((work / "result.json").read_text())
    return {(entry, name): result for (entry, name), result in zip(cases, results)}, work


def test_nothing_is_written_fetched_run_or_imported_on_any_entry_point(audit):
    results, work = audit
    recorded = {f"{entry} {name}": r["events"] for (entry, name), r in results.items() if r["events"]}
    assert not recorded
    assert not (work / "files" / "pwned").exists()


@pytest.mark.parametrize("name", [n for n, (_, expected) in hostile.FILES.items() if expected == "refused"])
def test_refused_everywhere_in_one_line_naming_the_file(audit, name):
    results, _ = audit
    assert any(file == name for _, file in results), name
    for (entry, file), r in results.items():
        if file != name or (entry in CONVERTERS and name in CONVERTERS_MAY_READ):
            continue
        assert r["outcome"] != "ok", f"{entry} loaded {name}"
        if entry in CONVERTERS:  # a refusal of the file, or of what it is not (BART, phase-one Z-Code++)
            assert {"CheckpointError", "ValueError"} & set(r["mro"]), (entry, r)
            assert "/" in r["message"], (entry, r["message"])  # names a file (the HF ones read config.json)
        else:
            assert "CheckpointError" in r["mro"], (entry, r)
            assert name in r["message"], (entry, r["message"])
        assert r["lines"] == 1 and r["length"] <= 1000, (entry, r)


@pytest.mark.parametrize("name", ["bert-bpe-without-vocabulary", "paths-to-devices", "huge-weight-decay", "good"])
def test_the_run_s_own_settings_are_ignored_and_the_file_loads(audit, name):
    results, _ = audit
    for entry in LOADERS + TRAINERS:
        if (entry, name) in results:
            assert results[entry, name]["outcome"] == "ok", (entry, results[entry, name])


def test_a_saved_training_time_past_the_stop_stops_training_naming_both(audit):
    results, _ = audit
    for entry in ("train_restore", "finetune"):
        r = results[entry, "training-time-past-the-stop"]
        assert "CheckpointError" in r["mro"] and "--stop-time-hours 1" in r["message"], r
    assert results["generate", "training-time-past-the-stop"]["outcome"] == "ok"
