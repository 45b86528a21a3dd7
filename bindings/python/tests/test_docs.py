"""The examples of docs/python.md run, in order, against each server; and the doctests."""

from __future__ import annotations

import doctest
import re
from typing import Any

import pytest

import ddblock
from conftest import ROOT

DOC = ROOT / "docs" / "python.md"


def python_blocks() -> list[tuple[int, str]]:
    """``(line number, code)`` of every ```python block."""
    text = DOC.read_text()
    blocks = []
    for m in re.finditer(r"^```python\n(.*?)^```$", text, re.S | re.M):
        line = text.count("\n", 0, m.start()) + 2
        blocks.append((line, m.group(1)))
    return blocks


def test_docs_have_examples() -> None:
    assert len(python_blocks()) >= 10


def test_docs_examples_run(
    endpoint: str, table: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DYNAMODB_ENDPOINT", endpoint)
    monkeypatch.setenv("DYNAMODB_CACHE_TABLE", table)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("CACHE_PREFIX", "app_")
    monkeypatch.setenv("DDBLOCK_LAYOUT", "laravel12")
    namespace: dict[str, Any] = {"__name__": "docs_python_md"}
    for line, code in python_blocks():
        try:
            exec(compile(code, f"{DOC}:{line}", "exec"), namespace)
        except Exception as e:
            pytest.fail(f"docs/python.md example at line {line} failed: {e!r}\n{code}")


def test_package_doctests() -> None:
    failures, tried = doctest.testmod(ddblock, verbose=False)
    assert tried > 0 and failures == 0
