"""Read the worked-example tables of ``docs/rules/<variant>.md`` so the tests use the documents' own
examples exactly as documented."""

from __future__ import annotations

from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs" / "rules"


def table(variant: str, heading: str) -> list[dict[str, str]]:
    """Rows of the first Markdown table under ``### heading`` in ``docs/rules/<variant>.md``."""
    lines = (DOCS / f"{variant}.md").read_text(encoding="utf-8").splitlines()
    try:
        start = lines.index(f"### {heading}")
    except ValueError:
        raise AssertionError(f"docs/rules/{variant}.md has no '### {heading}' section") from None
    rows: list[list[str]] = []
    for line in lines[start + 1 :]:
        if line.startswith("#"):
            break
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    if len(rows) < 3:
        raise AssertionError(f"the table under '### {heading}' has no rows")
    header, _separator, *body = rows
    return [dict(zip(header, row, strict=True)) for row in body]


def ints(cell: str) -> list[int]:
    return [int(part) for part in cell.split()]
