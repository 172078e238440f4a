"""How the CLI shows long work and results: progress on stderr, results as tables on stdout
(rich). Progress is drawn live on a terminal and left out when stderr is not one, so a log file
or a pipe gets the results, not a redrawn bar."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table


class Step:
    """One line of progress: ``advance()`` by what was done, ``describe()`` what is being done."""

    def __init__(self, progress: Progress, task: Any) -> None:
        self._progress, self._task = progress, task

    def advance(self, by: float = 1) -> None:
        self._progress.advance(self._task, by)

    def set(self, completed: float) -> None:
        self._progress.update(self._task, completed=completed)

    def describe(self, text: str) -> None:
        self._progress.update(self._task, description=text)


@contextmanager
def progress(description: str, total: float | None = None) -> Iterator[Step]:
    """A bar when ``total`` is known, a spinner with a count when it is not; on stderr."""
    console = Console(stderr=True)
    columns: list[Any] = [SpinnerColumn(), TextColumn("{task.description}")]
    columns += [BarColumn(), MofNCompleteColumn()] if total is not None else [TextColumn("{task.completed:.0f}")]
    with Progress(
        *columns, TimeElapsedColumn(), console=console, transient=True, disable=not console.is_terminal
    ) as bar:
        yield Step(bar, bar.add_task(description, total=total))


def table(title: str, columns: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """Results as a table on stdout (numbers right-aligned)."""
    shown = Table(title=title, title_justify="left")
    for index, name in enumerate(columns):
        numeric = bool(rows) and all(isinstance(row[index], int | float) for row in rows)
        shown.add_column(name, justify="right" if numeric else "left")
    for row in rows:
        shown.add_row(*(f"{v:.4f}" if isinstance(v, float) else str(v) for v in row))
    Console(soft_wrap=True).print(shown)
