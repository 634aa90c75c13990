"""Load model files through every entry point inside one watched process.

    python tests/helpers/audit_run.py SPEC.json RESULT.json

SPEC: ``{"data": DIR, "work": DIR, "cases": [[entry, file], ...]}``. Everything is imported
first; then an audit hook (:func:`sys.addaudithook`) records, per case, every file opened for
writing outside the case's own folder, every read of a device or FIFO, every network call,
every new process and every module imported from outside the installed packages and this
repository, while an address-space cap holds (``RLIMIT_AS``). RESULT: per case the outcome
(``ok`` or the error's type and first line, and how many lines it had) and what was recorded.
"""

import contextlib
import io
import json
import os
import resource
import shutil
import stat
import sys
import sysconfig
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests" / "helpers")]

import torch  # noqa: E402

torch.set_num_threads(1)
import fairseq_cli.validate  # noqa: E402,F401
from fairseq import hub_utils, options  # noqa: E402

import harness  # noqa: E402
import user_dir  # noqa: E402
from fairseq_ext.cli import convert as convert_cli  # noqa: E402
from fairseq_ext.cli import zcodepp_export  # noqa: E402

ARCH = "bart_summ_tiny"
SHORT_TRAIN = ["--max-tokens", "600", "--disable-validation", "--no-save", "--max-update", "1",
               "--stop-time-hours", "1"]
ROOTS = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")} | {str(REPO)}
NETWORK = {"socket.connect", "socket.getaddrinfo", "socket.gethostbyname", "socket.sendto", "socket.bind",
           "urllib.Request", "http.client.connect"}
PROCESS = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty"}
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

state = {"case": None, "allowed": (), "events": []}


def _under(path, roots):
    real = os.path.realpath(path)
    return any(real == r or real.startswith(r.rstrip("/") + "/") for r in roots)


def hook(event, args):
    if state["case"] is None:
        return
    if event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
        path = os.fsdecode(args[0])
        mode, flags = args[1], args[2] if len(args) > 2 else 0
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or bool((flags or 0) & WRITE_FLAGS)
        if writing and not _under(path, state["allowed"]) and path != "/dev/null":
            state["events"].append(f"write {path}")
        elif not writing and path.startswith("/dev/") and path not in ("/dev/null", "/dev/urandom"):
            state["events"].append(f"read device {path}")
        elif not writing:
            with contextlib.suppress(OSError):
                if stat.S_ISFIFO(os.stat(path).st_mode):
                    state["events"].append(f"read FIFO {path}")
    elif event in NETWORK:
        state["events"].append(f"network {event} {args!r:.120}")
    elif event in PROCESS or event.startswith("os.exec") or event.startswith("os.spawn"):
        state["events"].append(f"process {event} {args!r:.120}")


# ---------------------------------------------------------------- the entry points
def generate(path, data, work):
    return harness.generate(data, path, ["--max-len-b", "4", "--beam", "1"])


def interactive(path, data, work):
    spm = ["--bpe", "sentencepiece", "--sentencepiece-model", str(Path(data).parent / "spm.model")]
    return harness.interactive(data, path, ["we parse text ."], ["--max-len-b", "4", "--beam", "1", *spm])


def validate(path, data, work):
    argv = ["fairseq-validate", str(data), "--user-dir", harness.USER_DIR, "--task", "abstractive_summarization",
            "--path", str(path), "--valid-subset", "valid", "--max-tokens", "600", "--no-progress-bar",
            "--num-workers", "0"]
    saved, sys.argv = sys.argv, argv
    try:
        fairseq_cli.validate.cli_main()
    finally:
        sys.argv = saved
    return True


def train_restore(path, data, work):
    return harness.train(data, work / "run", ARCH, SHORT_TRAIN + ["--restore-file", path])


def finetune(path, data, work):
    return harness.train(data, work / "run", ARCH, SHORT_TRAIN + ["--finetune-from-model", path])


def ema_seed(path, data, work):
    return harness.train(data, work / "run", ARCH, SHORT_TRAIN + ["--store-ema", "--ema-seed-model", path])


def hub(path, data, work):
    summarizer = user_dir.from_pretrained(str(Path(path).parent), checkpoint_file=Path(path).name,
                                          data_name_or_path=str(data))
    return summarizer.summarize(["we parse text with a small model ."], beam=1, max_len_b=4)


def fairseq_hub(path, data, work):
    return hub_utils.from_pretrained(str(Path(path).parent), checkpoint_file=Path(path).name,
                                     data_name_or_path=str(data), user_dir=harness.USER_DIR)["models"]


def bart_ls_convert(path, data, work):
    return convert_cli.main(["bart_ls", "--bart", str(path), "--dict", str(Path(data) / "dict.source.txt"),
                             "--out", str(work / "ls"), "--arch", "bart_ls_tiny", "--max-source-positions", "512",
                             "--num-sentinels", "4", "--block-size", "64", "--global-tokens", "4",
                             "--pooling-layers", "1"])


def s2s_ft_convert(path, data, work):
    hf = work / "hf"
    hf.mkdir(exist_ok=True)
    (hf / "config.json").write_text(json.dumps({"model_type": "bert", "vocab_size": 10}))
    shutil.copy(path, hf / "pytorch_model.bin")
    return convert_cli.main(["s2s_ft", "--hf-dir", str(hf), "--dict", str(Path(data) / "dict.source.txt"),
                             "--out", str(work / "s2s")])


def export(path, data, work):
    return zcodepp_export.main([str(path), str(work / "exported.pt")])


ENTRIES = {f.__name__: f for f in (generate, interactive, validate, train_restore, finetune, ema_seed, hub,
                                    fairseq_hub, bart_ls_convert, s2s_ft_convert, export)}


def run_case(entry, path, data, work):
    work.mkdir(parents=True, exist_ok=True)
    allowed = (str(work), os.environ["TMPDIR"], str(Path(path).parent / "interactive.input"))
    state.update(case=f"{entry}:{Path(path).name}", allowed=allowed, events=[])
    before, start = set(sys.modules), time.perf_counter()
    outcome = {"entry": entry, "file": str(path)}
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            ENTRIES[entry](path, data, work)
        outcome["outcome"] = "ok"
    except BaseException as err:  # noqa: BLE001  (SystemExit of a CLI, MemoryError under the cap)
        text = str(err)
        outcome.update(outcome=type(err).__name__, mro=[c.__name__ for c in type(err).__mro__],
                       message=text.splitlines()[0][:2000] if text else "", lines=len(text.splitlines()),
                       length=len(text))
    finally:
        state["case"] = None
    foreign = [m for m in set(sys.modules) - before
               if getattr(sys.modules[m], "__file__", None) and not _under(sys.modules[m].__file__, ROOTS)]
    outcome["seconds"] = round(time.perf_counter() - start, 3)
    outcome["events"] = state["events"] + [f"import {m} from {sys.modules[m].__file__}" for m in foreign]
    return outcome


def main(spec_path, result_path):
    spec = json.loads(Path(spec_path).read_text())
    data, work = Path(spec["data"]), Path(spec["work"])
    os.environ["TMPDIR"] = str(work / "tmp")
    (work / "tmp").mkdir(parents=True, exist_ok=True)
    options.get_generation_parser()  # imports the plugin the way the CLIs do, before the watch begins
    with open("/proc/self/status") as status:
        virtual = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize"))
    cap = virtual + int(spec.get("headroom_bytes", 3 << 30))
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    sys.addaudithook(hook)
    results = [run_case(entry, path, data, work / f"case{i}") for i, (entry, path) in enumerate(spec["cases"])]
    state["case"] = None
    Path(result_path).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main(*sys.argv[1:3])
