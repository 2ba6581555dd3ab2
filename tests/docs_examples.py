"""The command blocks of the README and the docs, and whether each one runs (docs/writing-docs.md).

A ```bash block is marked by an HTML comment on the line before it: ``<!-- runnable -->``,
``<!-- runnable exit=N -->`` (the status it must end with) or ``<!-- not-runnable: reason -->``.
tests/unit/docs checks every block is marked; tests/e2e/test_docs_examples.py runs the runnable ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHELL = {"bash", "sh", "shell", "console"}
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
RUNNABLE = re.compile(r"^<!-- runnable(?: exit=(?P<exit>\d+))? -->$")
NOT_RUNNABLE = re.compile(r"^<!-- not-runnable: (?P<reason>\S.*\S) -->$")
MARKER = re.compile(r"^<!-- (not-)?runnable\b")
# An untyped block that starts like a command must say what it is too.
COMMAND = re.compile(r"^(python3? -m evalharness|evalharness |pip install )")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    info: str  # the fence's language
    text: str
    marker: str | None  # the comment line before the fence, when it is one of ours (else None)

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"

    @property
    def is_command(self) -> bool:
        return self.info in SHELL or (self.info == "" and bool(COMMAND.match(self.text.lstrip())))

    @property
    def runnable(self) -> bool:
        return bool(self.marker and RUNNABLE.match(self.marker))

    @property
    def expected_exit(self) -> int:
        m = RUNNABLE.match(self.marker or "")
        return int(m["exit"]) if m and m["exit"] else 0

    def problem(self) -> str | None:
        """Why this command block's marker is missing or malformed (None when fine)."""
        if not self.is_command:
            return None
        if self.marker is None:
            return "no <!-- runnable --> or <!-- not-runnable: reason --> comment on the line before it"
        if not (RUNNABLE.match(self.marker) or NOT_RUNNABLE.match(self.marker)):
            return f"malformed marker {self.marker!r}"
        return None


def doc_files() -> list[Path]:
    """The Markdown a reader runs commands from."""
    files = [REPO / "README.md", REPO / "CONTRIBUTING.md", REPO / "datasets" / "README.md"]
    return [f for f in files if f.is_file()] + sorted((REPO / "docs").rglob("*.md"))


def blocks(path: Path) -> list[Block]:
    """Fenced code blocks at the top level of ``path`` (blocks shown inside a longer fence are text)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, indent = m["fence"], len(m["indent"])
        j = i + 1
        while j < len(lines) and not re.match(rf"^ *{re.escape(fence[0])}{{{len(fence)},}} *$", lines[j]):
            j += 1
        body = "\n".join(line[indent:] for line in lines[i + 1 : j])
        before = next((lines[k].strip() for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        marker = before if MARKER.match(before) else None
        found.append(Block(path, i + 1, m["info"].strip().split(" ")[0], body + "\n", marker))
        i = j + 1
    return found


def all_blocks() -> list[Block]:
    return [b for f in doc_files() for b in blocks(f)]


# The pages a new user follows first: their runnable blocks run in a fresh copy of the clone with
# nothing beside it (tests/e2e/test_readme_examples.py), so they may use only what ships.
FRESH_CLONE_PAGES = (REPO / "README.md", REPO / "docs" / "getting-started.md")


def runnable_blocks(pages: tuple[Path, ...] | None = None) -> list[Block]:
    """Runnable blocks (of ``pages`` only, when given), each distinct text once (the README repeats
    some of the docs' examples)."""
    seen, out = set(), []
    for b in (b for f in (pages or doc_files()) for b in blocks(f)):
        if b.runnable and (b.text, b.expected_exit) not in seen:
            seen.add((b.text, b.expected_exit))
            out.append(b)
    return out
