"""Peak memory of one configuration, measured in a fresh process, under a memory cap.

    result = run_capped([sys.executable, script, "--one", ...], cap_mib=12000)
    # {"returncode": 0, "killed": False, "maxrss_mib": 3100.2, "stdout": "...", ...}

The child measures itself (``ru_maxrss`` growth over a baseline taken just before the step, see
:func:`peak_mib`); the parent only guards the shared machine: it samples the child's
resident set (``/proc/PID/status`` ``VmRSS``) and kills it above ``cap_mib``, so a configuration
that does not fit is reported as such instead of driving the box into the OOM killer.
"""

import os
import resource
import signal
import subprocess
import threading
import time

POLL_SECONDS = 0.05


def resident_mib(pid):
    """Current resident set of ``pid`` in MiB (0 once it has exited)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0.0


def available_mib():
    """``MemAvailable`` of the machine in MiB (what ``free`` calls available)."""
    with open("/proc/meminfo", encoding="ascii") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no MemAvailable in /proc/meminfo")


def peak_mib():
    """This process's peak resident set so far (``ru_maxrss``), in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_capped(cmd, cap_mib, env=None):
    """Run ``cmd``; kill it if its resident set exceeds ``cap_mib``. Returns a dict with
    ``returncode``, ``killed`` (True if the cap was hit), ``maxrss_mib`` (the child's whole
    peak resident set, ``ru_maxrss`` from ``wait4``), ``sampled_peak_mib`` (the largest
    ``VmRSS`` sample) and ``stdout``/``stderr``."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    streams = {}
    # read the pipes in the background so that a chatty child cannot block on a full pipe
    readers = [threading.Thread(target=lambda n, s: streams.__setitem__(n, s.read()), args=(n, s))
               for n, s in (("stdout", proc.stdout), ("stderr", proc.stderr))]
    for reader in readers:
        reader.start()
    sampled, killed = 0.0, False
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        rss = resident_mib(proc.pid)
        sampled = max(sampled, rss)
        if rss > cap_mib and not killed:
            os.kill(proc.pid, signal.SIGKILL)
            killed = True
        time.sleep(POLL_SECONDS)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    for reader in readers:
        reader.join()
    return {"returncode": proc.returncode, "killed": killed, "maxrss_mib": usage.ru_maxrss / 1024,
            "sampled_peak_mib": sampled, "stdout": streams.get("stdout", ""), "stderr": streams.get("stderr", "")}


def single_threaded_env():
    """The environment for a child that should use one intra-op thread (shared machine)."""
    return dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
