"""What every section of the benchmark report is written with: markdown tables, numbers, plots
(matplotlib's pyplot, headless) saved, and the summary of goals (compat-tests/bench/report.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

__all__ = ["Goals", "Row", "f", "plt", "save", "table"]

Row = dict[str, Any]


def table(head: list[str], rows: list[list[Any]], align: str = "") -> str:
    """A markdown table; `align` has one letter per column (l or r; default: first l, rest r)."""
    align = align or "l" + "r" * (len(head) - 1)
    sep = ["---" if a == "l" else "---:" for a in align]
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def save(fig: Any, path: Path) -> None:
    """Writes a plot and closes it."""
    fig.savefig(path, dpi=110)
    plt.close(fig)


def f(x: float, digits: int = 2) -> str:
    return f"{x:.{digits}f}"


class Goals:
    """The summary: one line per goal."""

    def __init__(self) -> None:
        self.rows: list[list[str]] = []

    def add(self, figure: str, what: str, measured: str, goal: str, met: bool | None) -> None:
        verdict = "n/a" if met is None else ("met" if met else "MISSED")
        self.rows.append([figure, what, measured, goal, verdict])

    def markdown(self) -> str:
        return table(["figure", "what", "measured", "goal", ""], self.rows, "lllll")

    def text(self) -> str:
        widths = [
            max(len(r[i]) for r in self.rows + [["figure", "what", "measured", "goal", ""]])
            for i in range(5)
        ]
        out = []
        for r in [["figure", "what", "measured", "goal", ""]] + self.rows:
            out.append("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
        return "\n".join(out)
