"""Tables, plots and the summary of one benchmark run (compat-tests/bench/run.sh runs it).

    report.py RESULTS.json --plots DIR [--docs docs/benchmarks.md]

Prints the summary table (every goal: measured, goal, met or missed), draws the PNG plots into
DIR and, with --docs, replaces the part of that file between the markers
<!-- bench:begin --> and <!-- bench:end --> with the tables of this run (machine and date stated).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from report_kit import Goals, Row, f, plt, save, table

BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"


def requests_section(rows: list[Row], goals: Goals) -> str:
    body = []
    for r in rows:
        pc = r["per_cycle"]
        ops = ", ".join(f"{op} {v:.2f}" for op, v in sorted(pc.items()))
        body.append([r["front"], r["cycles"], f(r["writes"]), f(r["reads"]), f(r["total"]), ops])
        if r["front"].startswith("stock"):
            continue
        ok = abs(r["writes"] - 2) < 1e-9 and r["reads"] == 0 and abs(r["total"] - 2) < 1e-9
        goals.add(
            "1 requests", r["front"], f"{r['total']:.2f} ({r['reads']:.2f} reads)", "2, 0 reads", ok
        )
    return table(
        ["front", "cycles", "writes/cycle", "reads/cycle", "requests/cycle", "by operation"],
        body,
        "lrrrrl",
    )


# The comparisons with a baseline and no goal: the pair's prefix, the summary's line, its goal text.
NO_GOAL_BASELINES = (
    ("Python binding vs", "Python binding / boto3 CPU per cycle", "(baseline: no goal)"),
    ("Node binding vs", "Node binding / AWS SDK v3 CPU per cycle", "(baseline: no goal)"),
    ("PHP driver", "PHP driver / stock Laravel CPU per cycle", "(no goal)"),
)


def cpu_section(pairs: list[Row], goals: Goals, plots: Path) -> str:
    body = []
    for p in pairs:
        o, b = p["ours"], p["baseline"]
        body.append(
            [
                p["pair"],
                f(o["cpu_us"], 0),
                f(b["cpu_us"], 0),
                f(p["cpu_ratio"]),
                f(o["wall_us"], 0),
                f(b["wall_us"], 0),
                f(p["rate_ratio"]),
            ]
        )
        name = p["pair"]
        if name.startswith("Rust core vs"):
            cpu, rate = p["cpu_ratio"], p["rate_ratio"]
            for what, ratio, goal, met in (
                ("Rust core / raw aws-sdk-dynamodb CPU per cycle", cpu, "<= 1.05", cpu <= 1.05),
                ("Rust core / raw SDK cycles per second", rate, ">= 0.95", rate >= 0.95),
            ):
                goals.add("2 CPU", what, f(ratio), goal, met)
        elif baseline := next((b for b in NO_GOAL_BASELINES if name.startswith(b[0])), None):
            goals.add("2 CPU", baseline[1], f(p["cpu_ratio"]), baseline[2], None)
        elif name.startswith(("Python binding over", "Node binding over")):
            # Node's goal is issue 22's (1.10); Python's stays 1.15.
            goal = 1.10 if name.startswith("Node") else 1.15
            ratio = p["cpu_ratio"]
            goals.add("2 CPU", name + " (CPU)", f(ratio), f"<= {goal:.2f}", ratio <= goal)
        elif name.startswith("Rust core with the OpenTelemetry SDK"):
            ratio = p["cpu_ratio"]
            what = "Rust core with / without an OpenTelemetry SDK (CPU)"
            goals.add("2 CPU", what, f(ratio), "<= 1.15", ratio <= 1.15)
        elif name.startswith("Rust core with its metrics compiled in"):
            ratio = p["cpu_ratio"]
            what = "Rust core, metrics compiled in and nobody listening / compiled out (CPU)"
            goals.add("2 CPU", what, f(ratio), "<= 1.02", ratio <= 1.02)
        elif name.startswith("CLI over"):
            what = name + " (two processes per cycle)"
            goals.add("2 CPU", what, f(p["cpu_ratio"], 0), "(no goal)", None)
    fig, ax = plt.subplots(figsize=(8, 4))
    shown = [p for p in pairs if " vs " in p["pair"]]
    labels = [
        p["pair"].split(" vs ")[0] + "\nvs " + p["pair"].split(" vs ")[1].split(" (")[0]
        for p in shown
    ]
    xs = range(len(shown))
    ax.bar([x - 0.2 for x in xs], [p["ours"]["cpu_us"] for p in shown], 0.4, label="ddblock")
    ax.bar([x + 0.2 for x in xs], [p["baseline"]["cpu_us"] for p in shown], 0.4, label="baseline")
    ax.set_xticks(list(xs), labels, fontsize=7)
    ax.set_ylabel("client CPU per acquire + release (µs)")
    ax.set_title("Client CPU per cycle, each against its baseline (same run)")
    ax.legend()
    fig.tight_layout()
    save(fig, plots / "cpu-per-cycle.png")
    return table(
        [
            "comparison",
            "ours CPU µs",
            "baseline CPU µs",
            "CPU ratio",
            "ours wall µs",
            "baseline wall µs",
            "rate ratio",
        ],
        body,
    )


def short(side: str) -> str:
    """A contention side's name for a plot's axis."""
    if side.startswith("mixed"):
        return "Laravel +\nddblock, one key"
    if "new PHP process" in side:
        return "Laravel\none-shot"
    if side.startswith("stock"):
        return "Laravel\nblock()"
    if side.startswith("ddblock before"):
        return "ddblock\nbefore"
    if "one process" in side:
        return "ddblock\none process"
    if "new CLI process" in side:
        return "ddblock run\none-shot"
    return "ddblock\nblock()"


WAITING_OWN = "(the waiting's own writes)"
# Worker counts at which the contention goals are judged (below them both sides are dominated by
# the two writes every acquisition needs, and a handful of waiters leaves fairness to chance).
JUDGED = (8, 32)
JUDGED_TEXT = "(judged at " + " and ".join(str(w) for w in JUDGED) + ")"


def max_min(r: Row) -> str:
    """Max / min acquisitions per worker; infinite (JSON null) when a worker got none."""
    ratio = r["max_min_ratio"]
    return "∞" if ratio is None else f(ratio)


def contention_goals(w: int, lar: Row, ours: Row, goals: Goals) -> None:
    """The summary's lines for `w` workers: ddblock's block() against stock Laravel's."""
    judged = w in JUDGED
    wr = ours["writes_per_acq"] / max(lar["writes_per_acq"], 1e-9)
    usd = ours["usd_per_million"] / max(lar["usd_per_million"], 1e-9)
    refused = f"{ours['refused_per_acq']:.2f} vs {lar['refused_per_acq']:.2f}"
    handoff = f"{ours['handoff_median_ms']:.1f} vs {lar['handoff_median_ms']:.1f}"
    lines: list[tuple[str, str, str, bool | None]] = [
        (
            "writes per acquisition, ddblock / Laravel",
            f(wr),
            "<= 0.5" if judged else JUDGED_TEXT,
            wr <= 0.5 if judged else None,
        ),
        ("refused writes per acquisition, ddblock vs Laravel", refused, WAITING_OWN, None),
        (
            "US$ per million acquisitions, ddblock / Laravel",
            f(usd),
            "<= 0.7 (reads included)" if judged else JUDGED_TEXT,
            usd <= 0.7 if judged else None,
        ),
        (
            "median hand-off ms, ddblock vs Laravel",
            handoff,
            "<= Laravel's",
            ours["handoff_median_ms"] <= lar["handoff_median_ms"],
        ),
    ]
    if judged:
        ratio = ours["max_min_ratio"]
        p99 = ours["p99_wait_ms"] / max(lar["p99_wait_ms"], 1e-9)
        lines += [
            (
                "max / min acquisitions per worker, ddblock vs Laravel",
                f"{max_min(ours)} vs {max_min(lar)} (Jain {ours['jain']:.2f} vs {lar['jain']:.2f})",
                "<= 1.5 (Jain >= 0.95)",
                ratio is not None and ratio <= 1.5,
            ),
            (
                "Jain's fairness index, ddblock vs Laravel",
                f"{ours['jain']:.3f} vs {lar['jain']:.3f}",
                ">= 0.95",
                ours["jain"] >= 0.95,
            ),
            (
                "max wait ms, ddblock vs Laravel",
                f"{ours['max_wait_ms']:.0f} vs {lar['max_wait_ms']:.0f}",
                "<= Laravel's",
                ours["max_wait_ms"] <= lar["max_wait_ms"],
            ),
            (
                "p99 wait, ddblock / Laravel",
                f"{p99:.2f} ({ours['p99_wait_ms']:.0f} vs {lar['p99_wait_ms']:.0f} ms)",
                "<= 0.8",
                p99 <= 0.8,
            ),
        ]
    for what, measured, goal, met in lines:
        goals.add("3 contention", f"{w} workers: {what}", measured, goal, met)


def oneshot_goals(w: int, lar: Row, ours: Row, goals: Goals) -> None:
    """The summary's lines for one-shot waiters (a new `ddblock run --wait` per acquisition)
    against stock Laravel's one-shot block() (a new PHP process per acquisition), judged at 8
    workers (issue 37)."""
    judged = w == 8
    wr = ours["writes_per_acq"] / max(lar["writes_per_acq"], 1e-9)
    acq = ours["acquire_writes_per_acq"] / max(lar["acquire_writes_per_acq"], 1e-9)
    usd = ours["usd_per_million"] / max(lar["usd_per_million"], 1e-9)
    lines: list[tuple[str, str, str, bool | None]] = [
        (
            "one-shot: writes per acquisition (releases included), ddblock / Laravel",
            f(wr),
            "<= 0.5" if judged else "(judged at 8)",
            wr <= 0.5 if judged else None,
        ),
        (
            "one-shot: acquire writes per acquisition, ddblock / Laravel",
            f(acq),
            "<= 0.5" if judged else "(judged at 8)",
            acq <= 0.5 if judged else None,
        ),
        (
            "one-shot: US$ per million acquisitions, ddblock / Laravel",
            f(usd),
            "<= 0.7 (reads included)" if judged else "(judged at 8)",
            usd <= 0.7 if judged else None,
        ),
        (
            "one-shot: max wait ms, ddblock vs Laravel",
            f"{ours['max_wait_ms']:.0f} vs {lar['max_wait_ms']:.0f}",
            "<= Laravel's",
            ours["max_wait_ms"] <= lar["max_wait_ms"],
        ),
    ]
    for what, measured, goal, met in lines:
        goals.add("3 contention", f"{w} workers: {what}", measured, goal, met)


def mixed_section(r: Row, goals: Goals) -> str:
    """The mixed run's summary line, and its table: each kind of worker apart."""
    m = r["mixed"]
    lar, ours = m["laravel"], m["ddblock"]
    goals.add(
        "3 contention",
        f"{r['workers']} workers, {lar['workers']} Laravel + {ours['workers']} ddblock: "
        "fewest acquisitions of a Laravel worker / of a ddblock worker",
        f"{lar['min_per_worker']} / {ours['min_per_worker']} "
        f"(max wait {lar['max_wait_ms']:.0f} / {ours['max_wait_ms']:.0f} ms)",
        "> 0 (neither kind starved)",
        lar["min_per_worker"] > 0 and ours["min_per_worker"] > 0,
    )
    body = [
        [
            name,
            k["workers"],
            k["acquisitions"],
            f"{k['min_per_worker']}–{k['max_per_worker']}",
            f(k["median_wait_ms"], 0),
            f(k["p99_wait_ms"], 0),
            f(k["max_wait_ms"], 0),
        ]
        for name, k in (("stock Laravel block() (PHP)", lar), ("ddblock block() (Rust)", ours))
    ]
    keys = "; ".join(f"`{k}` (held by {', '.join(who)})" for k, who in m["keys_seen"].items())
    text = table(
        [
            f"{r['workers']} workers on one key",
            "workers",
            "acquisitions",
            "acquisitions per worker",
            "median wait ms",
            "p99 wait ms",
            "max wait ms",
        ],
        body,
    )
    return (
        f"{text}\n\nTable keys seen during the mixed run: {keys or 'none'}; "
        f"holds of one kind overlapping a hold of the other: {m['cross_overlaps']}."
    )


def contention_section(rows: list[Row], goals: Goals, plots: Path) -> str:
    body = []
    for r in rows:
        body.append(
            [
                r["side"],
                r["workers"],
                r["acquisitions"],
                f(r["writes_per_acq"]),
                f(r["acquire_writes_per_acq"]),
                f(r["refused_per_acq"]),
                f(r["reads_per_acq"]),
                f(r["handoff_median_ms"], 1),
                f(r["handoff_p99_ms"], 1),
                f(r["p99_wait_ms"], 0),
                f(r["max_wait_ms"], 0),
                f"{r['min_per_worker']}–{r['max_per_worker']}",
                max_min(r),
                f(r["jain"]),
                f(r["wru_eq_per_1000"], 0),
                f(r["usd_per_million"]),
            ]
        )
    by: dict[tuple[int, str], Row] = {(r["workers"], r["side"]): r for r in rows}
    sides = list(dict.fromkeys(r["side"] for r in rows))
    laravel = next((s for s in sides if s.startswith("stock") and "new PHP" not in s), None)
    laravel_once = next((s for s in sides if "new PHP process" in s), None)
    core = next((s for s in sides if s.startswith("ddblock block() (Rust")), None)
    workers = sorted({r["workers"] for r in rows})
    oneshot = next((s for s in sides if "new CLI process" in s), None)
    for w in workers:
        if laravel and core and (w, laravel) in by and (w, core) in by:
            contention_goals(w, by[(w, laravel)], by[(w, core)], goals)
        if laravel_once and oneshot and (w, laravel_once) in by and (w, oneshot) in by:
            oneshot_goals(w, by[(w, laravel_once)], by[(w, oneshot)], goals)
    mixed = [mixed_section(r, goals) for r in rows if r.get("mixed")]
    # Plots: hand-off, writes and fairness vs contention; hand-off distributions.
    fig, (a1, a2, a3) = plt.subplots(1, 3, figsize=(14, 4.8))
    for s in sides:
        pts = [(w, by[(w, s)]) for w in workers if (w, s) in by]
        xs = [w for w, _ in pts]
        a1.plot(xs, [r["handoff_median_ms"] for _, r in pts], marker="o", label=s)
        a2.plot(xs, [r["writes_per_acq"] for _, r in pts], marker="o", label=s)
        a3.plot(xs, [r["jain"] for _, r in pts], marker="o", label=s)
    for a, t in (
        (a1, "median hand-off (ms)"),
        (a2, "write requests per acquisition"),
        (a3, "Jain's index, acquisitions per worker"),
    ):
        a.set_xscale("log", base=2)
        a.set_xticks(workers, [str(w) for w in workers])
        a.set_xlabel("workers wanting one key")
        a.set_ylabel(t)
        a.grid(alpha=0.3)
    a3.set_ylim(0, 1.05)
    a3.axhline(0.95, color="grey", linestyle=":", linewidth=1)
    handles, labels = a1.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=7)
    fig.suptitle("Contention: 50 ms of work per acquisition")
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    save(fig, plots / "contention.png")
    fig, axes = plt.subplots(1, len(workers), figsize=(4 * len(workers), 3.5), squeeze=False)
    for ax, w in zip(axes[0], workers):
        data = [by[(w, s)]["handoff_samples_ms"] or [0.0] for s in sides if (w, s) in by]
        ax.boxplot(data, whis=(1, 99), showfliers=False)
        ax.set_xticks(
            range(1, len(data) + 1),
            [short(s) for s in sides if (w, s) in by],
            fontsize=7,
        )
        ax.set_title(f"{w} workers")
        ax.set_ylabel("hand-off latency (ms), whiskers p1–p99")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    save(fig, plots / "handoff-latency.png")
    metric_histograms([by[(w, core)] for w in workers if core and (w, core) in by], plots)
    main = table(
        [
            "waiting",
            "workers",
            "acquisitions",
            "writes/acq",
            "acquire writes/acq",
            "refused writes/acq",
            "reads/acq",
            "hand-off median ms",
            "hand-off p99 ms",
            "p99 wait ms",
            "max wait ms",
            "acquisitions per worker",
            "max/min",
            "Jain",
            "WRU-eq per 1,000 acq",
            "US$ per million acq",
        ],
        body,
    )
    return "\n\n".join([main, *mixed])


def metric_histograms(rows: list[Row], plots: Path) -> None:
    """The wait and hold distributions of ddblock's Rust workers, drawn from their own metrics
    (`ddblock.lock.wait.duration`, `ddblock.lock.hold.duration`: the buckets an OpenTelemetry
    SDK in each worker recorded, summed), one line per worker count."""
    rows = [r for r in rows if r.get("histograms")]
    if not rows:
        return
    names = ("ddblock.lock.wait.duration", "ddblock.lock.hold.duration")
    fig, axes = plt.subplots(1, len(names), figsize=(12, 4))
    for ax, name in zip(axes, names):
        for r in rows:
            h = r["histograms"].get(name)
            if not h:
                continue
            bounds, counts = h["bounds"], h["counts"]
            labels = [f"≤{b:g}" for b in bounds] + [f">{bounds[-1]:g}"]
            total = sum(counts) or 1
            ax.plot(
                labels, [c / total for c in counts], marker="o", label=f"{r['workers']} workers"
            )
        ax.set_title(f"{name} (s)")
        ax.set_xlabel("bucket (seconds)")
        ax.set_ylabel("share of values")
        ax.tick_params(axis="x", labelrotation=60, labelsize=7)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("ddblock block() (Rust): waits and holds as its own metrics recorded them")
    fig.tight_layout()
    save(fig, plots / "metric-histograms.png")


def local_section(rows: list[Row], goals: Goals) -> str:
    body = [
        [
            r["waiters"],
            f(r["hold_secs"], 1),
            r["writes"],
            r["reads"],
            f(r["requests_per_sec"], 1),
            f(r["drain_ms"], 0),
        ]
        for r in rows
    ]
    one = next((r for r in rows if r["waiters"] == 1), None)
    if one:
        for r in rows:
            if r["waiters"] > 1:
                ratio = r["requests_per_sec"] / max(one["requests_per_sec"], 1e-9)
                goals.add(
                    "3 local waiters",
                    f"{r['waiters']} local waiters / 1: requests per second",
                    f(ratio),
                    "about 1 (<= 1.5)",
                    ratio <= 1.5,
                )
    return table(
        [
            "waiters in one process",
            "hold s",
            "writes",
            "reads",
            "requests/s while held",
            "release → all done ms",
        ],
        body,
    )


def scaling_section(rows: list[Row], goals: Goals, plots: Path) -> str:
    langs = list(dict.fromkeys(r["language"] for r in rows))
    levels = sorted({r["locks"] for r in rows})
    by = {(r["language"], r["locks"]): r for r in rows}
    body = []
    for n in levels:
        line: list[Any] = [n]
        for lang in langs:
            r = by.get((lang, n))
            line += [f(r["cycles_per_sec"], 0), f(r["cpu_us_per_cycle"], 0)] if r else ["", ""]
        body.append(line)
    for lang in langs:
        cpu = [by[(lang, n)]["cpu_us_per_cycle"] for n in levels if (lang, n) in by]
        spread = max(cpu) / max(min(cpu), 1e-9)
        goals.add(
            "4 scaling",
            f"{lang}: CPU per cycle, max / min over 1–{levels[-1]} locks",
            f(spread),
            "flat (<= 1.25)",
            spread <= 1.25,
        )
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    for lang in langs:
        pts = [by[(lang, n)] for n in levels if (lang, n) in by]
        a1.plot(
            [r["locks"] for r in pts], [r["cpu_us_per_cycle"] for r in pts], marker="o", label=lang
        )
        a2.plot(
            [r["locks"] for r in pts], [r["cycles_per_sec"] for r in pts], marker="o", label=lang
        )
    for a, t in ((a1, "client CPU per cycle (µs)"), (a2, "cycles per second")):
        a.set_xscale("log", base=2)
        a.set_xlabel("concurrent distinct locks in one process")
        a.set_ylabel(t)
        a.set_ylim(bottom=0)
        a.grid(alpha=0.3)
        a.legend()
    fig.suptitle("Scaling: acquire + release of distinct locks (dynalite on the same 2 cores)")
    fig.tight_layout()
    save(fig, plots / "scaling.png")
    head = ["locks"] + [h for lang in langs for h in (f"{lang} cycles/s", f"{lang} CPU µs/cycle")]
    return table(head, body)


def stuck_section(rows: list[Row], goals: Goals) -> str:
    body = [
        [
            r["stale_ms"],
            r["side"],
            r["cycles"],
            r["acquired"],
            r["stuck"],
            r["overlaps"],
            r["errors"],
            f(r["requests_per_cycle"]),
        ]
        for r in rows
    ]
    ours = [r for r in rows if not r["side"].startswith("stock")]
    bad = sum(r["stuck"] + r["overlaps"] for r in ours)
    goals.add(
        "5 stuck locks",
        "driver and ddblock: stuck locks + overlaps, all stalenesses",
        str(bad),
        "0",
        bad == 0,
    )
    lar = [r for r in rows if r["side"].startswith("stock")]
    goals.add(
        "5 stuck locks",
        "stock Laravel: stuck / acquired at " + ", ".join(f"{r['stale_ms']} ms" for r in lar),
        ", ".join(f"{r['stuck']}/{r['acquired']}" for r in lar),
        "(baseline)",
        None,
    )
    return table(
        [
            "staleness ms",
            "release path",
            "cycles",
            "acquired",
            "stuck",
            "overlaps",
            "errors",
            "requests/cycle",
        ],
        body,
        "rlrrrrrr",
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("results", type=Path)
    ap.add_argument("--plots", type=Path, required=True)
    ap.add_argument("--docs", type=Path)
    ap.add_argument("--note", action="append", default=[], help="a paragraph after the run line")
    args = ap.parse_args()
    res: dict[str, Any] = json.loads(args.results.read_text())
    args.plots.mkdir(parents=True, exist_ok=True)
    goals = Goals()
    m = res["machine"]
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(res["started"]))
    parts = [
        (
            f"Run of {when}, profile `{res['profile']}`, {res['seconds']:.0f} s: {m['cores']} cores ({m['cpu']}), "
            f"Linux {m['kernel']}, load average {m['loadavg']} at the start and {m['loadavg_end']} at the end "
            "(the load average includes the benchmark's own servers and clients: absolute figures move "
            "with the machine, ratios within one run are the result)."
        )
    ]
    parts[0] = "\n\n".join([parts[0], *args.note])
    plots_rel = os.path.relpath(args.plots, args.docs.parent) if args.docs else str(args.plots)
    sections = [
        ("requests", "### 1. Requests per uncontended acquire + release", requests_section, False),
        ("cpu", "### 2. Client CPU per cycle", cpu_section, True),
        ("contention", "### 3. Contention: workers wanting one key", contention_section, True),
        ("local", "### 3b. Waiters in one process on a key held elsewhere", local_section, False),
        (
            "scaling",
            "### 4. Scaling: concurrent distinct locks in one process",
            scaling_section,
            True,
        ),
        ("stuck", "### 5. Stuck locks by staleness (moto)", stuck_section, False),
    ]
    images = {
        "cpu": ["cpu-per-cycle.png"],
        "contention": ["contention.png", "handoff-latency.png"],
        "scaling": ["scaling.png"],
    }
    for key, title, fn, wants_plots in sections:
        if key not in res:
            continue
        text = fn(res[key], goals, args.plots) if wants_plots else fn(res[key], goals)
        parts.append(f"{title}\n\n{text}")
        for img in images.get(key, []):
            parts.append(f"![{img[:-4]}]({plots_rel}/{img})")
    summary = goals.markdown()
    print("\n" + goals.text() + "\n")
    if args.docs:
        doc = args.docs.read_text()
        if BEGIN not in doc or END not in doc:
            print(f"{args.docs}: no {BEGIN} ... {END} markers", file=sys.stderr)
            return 1
        block = "\n\n".join([parts[0], "### Summary: every goal\n\n" + summary] + parts[1:])
        head, rest = doc.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        args.docs.write_text(f"{head}{BEGIN}\n\n{block}\n\n{END}{tail}")
        print(f"[bench] tables written to {args.docs}, plots to {args.plots}")
    else:
        (args.plots / "report.md").write_text("\n\n".join([parts[0], summary] + parts[1:]) + "\n")
        print(f"[bench] tables and plots in {args.plots}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
