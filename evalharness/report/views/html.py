"""One self-contained HTML file per report: inline CSS, inline SVG plots, base64 thumbnails.

A report is mailed, attached to CI runs and opened years later, so it loads nothing: no scripts, no
fonts, no external images.
"""

from __future__ import annotations

import base64
import io
from typing import TYPE_CHECKING

from evalharness.core.escape import html_text
from evalharness.core.tables import Section, numeric_columns
from evalharness.report.views.plots import MISSING_NOTE

if TYPE_CHECKING:
    from evalharness.tasks.view import Shapes

CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em auto; max-width: 72em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
section { overflow-x: auto; } table { border-collapse: collapse; margin: .5em 0; }
th, td { padding: .2em .7em; border-bottom: 1px solid #eee; text-align: left; }
.num { text-align: right; }
th { background: #f4f4f4; }
td:first-child, th:first-child { position: sticky; left: 0; background: #fff; z-index: 1; }
th:first-child { background: #f4f4f4; }
p.note { color: #555; margin: .3em 0; }
.fail { color: #b00; font-weight: bold; }
figure { margin: 1em 0; } figcaption { color: #555; font-size: .9em; }
figure.plot svg { max-width: 100%; height: auto; }
.thumbs { display: flex; flex-wrap: wrap; gap: 1em; }
.thumbs figure { margin: 0; width: 10em; overflow-wrap: anywhere; }
.thumbs img { max-width: 10em; border: 1px solid #ccc; }
"""


def section_html(s: Section) -> str:
    parts = [f'<section id="{html_text(s.key)}">' if s.key else "<section>", f"<h2>{html_text(s.title)}</h2>"]
    if s.headers:
        right = numeric_columns(s.rows, len(s.headers))
        head = "".join(_cell(h, r, "th") for h, r in zip(s.headers, right, strict=True))
        body = "".join(
            "<tr>" + "".join(_cell(c, r) for c, r in zip(row, right, strict=True)) + "</tr>" for row in s.rows
        )
        parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
    parts += [f'<p class="note">{html_text(n)}</p>' for n in s.notes]
    return "\n".join(parts) + "\n</section>"


def _cell(text: str, numeric: bool, tag: str = "td") -> str:
    classes = " ".join(c for c, on in (("num", numeric), ("fail", text in ("FAIL", "failed"))) if on)
    attr = f' class="{classes}"' if classes else ""
    return f"<{tag}{attr}>{html_text(text)}</{tag}>"


def figure_html(caption: str, svg: str | None, note: str = "") -> str:
    """An inline SVG with its caption, or the note saying why there is no plot."""
    if svg is None:
        text = f"{html_text(caption)}: {MISSING_NOTE}"
        return f'<figure class="plot missing"><figcaption>{text}</figcaption></figure>'
    extra = f" {html_text(note)}" if note else ""
    return f'<figure class="plot">{svg}<figcaption>{html_text(caption)}.{extra}</figcaption></figure>'


def thumbnails_html(title: str, items: list[tuple[str, str]], notes: list[str] | None = None) -> str:
    """(caption, data URI) pairs as a grid of small images, then the notes saying what was not shown;
    nothing when there is neither."""
    if not items and not notes:
        return ""
    cells = "".join(
        f'<figure><img src="{uri}" alt="{html_text(cap)}"><figcaption>{html_text(cap)}</figcaption></figure>'
        for cap, uri in items
    )
    grid = f'<div class="thumbs">{cells}</div>' if items else ""
    said = "".join(f'<p class="note">{html_text(n)}</p>' for n in notes or [])
    return f'<section id="thumbnails"><h2>{html_text(title)}</h2>{grid}{said}</section>'


def thumbnail_uri_of(data: bytes, size: int = 128, shapes: Shapes | None = None) -> str | None:
    """A small JPEG of encoded image bytes (a file's or a container member's, read through the run's
    images) as a data URI, ``shapes`` drawn on it first (:mod:`.shape_drawing`); None when they are
    not a readable image."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as img:
            img = img.convert("RGB")
            if shapes:
                from evalharness.report.views.shape_drawing import draw_shapes

                img = draw_shapes(img, shapes, size)
            img.thumbnail((size, size))
            buf = io.BytesIO()
            img.save(buf, format="JPEG", quality=70)
    except (OSError, UnidentifiedImageError, ValueError, Image.DecompressionBombError):
        return None
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def page(title: str, sections: list[Section], after: dict[str, list[str]] | None = None) -> str:
    """The whole document; ``after`` maps a section key to HTML blocks placed right after it."""
    after = after or {}
    body = []
    for s in sections:
        body.append(section_html(s))
        body += [block for block in after.get(s.key, []) if block]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html_text(title)}</title><style>{CSS}</style></head>\n"
        f"<body><h1>{html_text(title)}</h1>\n" + "\n".join(body) + "\n</body></html>\n"
    )
