"""Plot train/valid loss and validation ROUGE against updates from a fairseq JSON log.

Train with ``--log-format json`` and keep fairseq-train's output (it logs to stdout)::

    fairseq-train ... --log-format json --log-interval 10 2>&1 | tee train.log
    python scripts/plot_training.py train.log --out training.png

The log lines read are fairseq's own::

    ... | INFO | train_inner | {"epoch": 1, "update": 0.5, "loss": "8.98", "num_updates": "2", ...}
    ... | INFO | train | {"epoch": 1, "train_loss": "8.974", "train_num_updates": "4", ...}
    ... | INFO | valid | {"epoch": 1, "valid_loss": "8.941", "valid_rougeL": "21.3", "valid_num_updates": "4", ...}

Top panel: the training loss of every ``train_inner`` line, the epoch averages (``train``) and
each validation subset's loss (``--valid-subset``). Bottom panel (when the run logged
``--eval-rouge``): validation ROUGE-1/2/L. Losses are fairseq's (base 2). The x axis counts
updates, or with ``--x minutes`` the wall-clock minutes since the log's first line (fairseq's
own time stamps: what a budget in minutes buys)::

    python scripts/plot_training.py train.log --out curve.png --x minutes
"""

import argparse
import json
import re
import sys
from collections import defaultdict
from datetime import datetime

LINE = re.compile(r"\| (?P<tag>[\w.-]+) \| (?P<stats>\{.*\})\s*$")
STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")
ROUGE_KEYS = ("rouge1", "rouge2", "rougeL")
X_AXES = {"updates": "updates", "minutes": "minutes since the log's first line"}


def read_log(lines, x="updates"):
    """``{series name: [(x, value), ...]}`` from fairseq JSON log lines, ``x`` the update
    number or (``x="minutes"``) the minutes since the first time-stamped line.

    Series: ``train_inner`` (loss per logged step), ``train`` (epoch loss), and per validation
    subset ``S``: ``S`` (loss) and ``S_rouge1`` / ``S_rouge2`` / ``S_rougeL`` when logged.
    Lines that are not fairseq JSON stats are skipped; repeated updates (a resumed run that
    logged the same update twice) keep the last value.
    """
    if x not in X_AXES:
        raise ValueError(f"x axis {x!r}: choose one of {', '.join(X_AXES)}")
    series, start = defaultdict(dict), None
    for line in lines:
        stamp = STAMP.match(line)
        if stamp:
            moment = datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S")
            start = start or moment
        match = LINE.search(line)
        if match is None:
            continue
        try:
            stats = json.loads(match.group("stats"))
        except json.JSONDecodeError:
            continue
        tag = match.group("tag")
        prefix = "" if tag == "train_inner" else f"{tag}_"
        update, loss = stats.get(f"{prefix}num_updates"), stats.get(f"{prefix}loss")
        if update is None or loss is None:
            continue
        if x == "minutes" and not stamp:
            continue  # a stats line without fairseq's time stamp
        at = int(float(update)) if x == "updates" else round((moment - start).total_seconds() / 60, 2)
        series[tag][at] = float(loss)
        if tag not in ("train_inner", "train"):
            for key in ROUGE_KEYS:
                if f"{prefix}{key}" in stats:
                    series[f"{tag}_{key}"][at] = float(stats[f"{prefix}{key}"])
    return {name: sorted(points.items()) for name, points in series.items()}


def plot(series, out, title=None, x="updates"):
    """Draw ``series`` (from :func:`read_log`) into the image file ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rouge = {name: points for name, points in series.items() if name.endswith(ROUGE_KEYS)}
    losses = {name: points for name, points in series.items() if name not in rouge}
    panels = 2 if rouge else 1
    figure, axes = plt.subplots(panels, 1, figsize=(7, 3.2 * panels), sharex=True, squeeze=False)
    loss_axis = axes[0][0]
    styles = {"train_inner": {"label": "train (logged steps)", "alpha": 0.6, "linewidth": 1},
              "train": {"label": "train (epoch)", "marker": "o", "linewidth": 1.5}}  # fmt: skip
    for name, points in losses.items():
        label = name if name == "valid" else f"valid ({name})"
        style = styles.get(name, {"label": label, "marker": "s", "linewidth": 1.5})
        loss_axis.plot(*zip(*points), **style)
    loss_axis.set_ylabel("loss (base 2)")
    loss_axis.grid(alpha=0.3)
    loss_axis.legend()
    if title:
        loss_axis.set_title(title)
    if rouge:
        rouge_axis = axes[1][0]
        for name, points in sorted(rouge.items()):
            rouge_axis.plot(*zip(*points), marker="o", label=name.replace("_", " "))
        rouge_axis.set_ylabel("validation ROUGE F1")
        rouge_axis.grid(alpha=0.3)
        rouge_axis.legend()
    axes[-1][0].set_xlabel(X_AXES[x])
    figure.tight_layout()
    figure.savefig(out, dpi=100)
    plt.close(figure)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", nargs="+", help="fairseq-train output(s) written with --log-format json, in order")
    parser.add_argument("--out", required=True, help="image to write (PNG)")
    parser.add_argument("--title", default=None, help="title of the plot")
    parser.add_argument("--x", choices=list(X_AXES), default="updates",
                        help="x axis: updates, or wall-clock minutes since the log's first line")
    args = parser.parse_args(argv)

    lines = []
    for path in args.logs:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines.extend(f)
    series = read_log(lines, args.x)
    if not series:
        parser.error(f"no fairseq JSON stats in {', '.join(args.logs)} (train with --log-format json)")
    plot(series, args.out, args.title, args.x)
    counts = ", ".join(f"{name}: {len(points)}" for name, points in sorted(series.items()))
    print(f"wrote {args.out} ({counts})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
