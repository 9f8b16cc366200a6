"""The pieces of memgrid's self-contained HTML pages (the coding report, each protocol's page, `compare`):
the inline style sheet, escaping, tables, the digests from run.json, a protocol page's opening, and an atomic write.
It sits below every report, so a protocol's page uses it without reaching the coding report's module."""

import html
import os
from pathlib import Path


CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d1d1f;margin:24px auto;max-width:1280px;padding:0 18px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.meta{color:#555}.row{display:flex;gap:24px;flex-wrap:wrap;align-items:flex-start}.row>div{flex:0 1 auto;min-width:0}
table{border-collapse:collapse;font-size:12.5px;margin:6px 0}th,td{padding:3px 8px;border-bottom:1px solid #e6e6e6;text-align:left;vertical-align:top}
th{background:#f3f4f6;position:sticky;top:0}td{white-space:nowrap}td.wrap{white-space:normal;min-width:14em}
td.n{text-align:right;font-variant-numeric:tabular-nums}
tr:nth-child(even) td{background:#fafafa}.positive{color:#1a7f37;font-weight:600}.negative{color:#b42318;font-weight:600}.noise{color:#777}
.confirmed{color:#1a7f37;font-weight:600}.refuted{color:#b42318;font-weight:600}.inconclusive{color:#9a6700;font-weight:600}
figure{margin:14px 0 22px}figure img{max-width:100%;height:auto;border:1px solid #eee}figcaption{color:#555;font-size:12.5px}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}details{margin:8px 0}
.note{color:#555;font-size:12.5px}.bad{color:#b42318}
"""

def escape(value) -> str:
    return html.escape(str(value))


def protocol_page_head(kind: str, title: str, run_id: str, lock: dict, count: str, flags: list[str]) -> str:
    """The opening of a protocol's own page: title, the run's identity, what it ran, and its flags."""
    grid = lock.get("grid", {})
    return (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>memgrid {escape(kind)} report {escape(run_id)}</title>"
            f"<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><style>{CSS}</style></head><body>"
            f"<h1>memgrid {escape(title)} report: run <code id=\"run-id\">{escape(run_id)}</code></h1>"
            f"<p class=\"meta\">created {escape(lock.get('created_at', '?'))} · git {escape((lock.get('git_commit') or 'unknown')[:12])} · "
            f"agents {escape(', '.join(grid.get('agents', [])))} · arms {escape(', '.join(grid.get('arms', [])))} · {escape(count)}</p>"
            "<h2>Flags</h2>" + (f"<ul id=\"flags\">{''.join(flags)}</ul>" if flags else "<p id=\"flags\">none</p>"))


def html_table(headers: list[str], rows: list[list], numeric: set[int] = frozenset(), table_id: str = "") -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            raw = isinstance(cell, tuple)  # (html, css class): already escaped by the caller
            text, cls = cell if raw else (escape(cell), "")
            classes = " ".join(x for x in ("n" if i in numeric else "", cls) if x)
            cells.append(f"<td class=\"{classes}\">{text}</td>" if classes else f"<td>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    ident = f' id="{table_id}"' if table_id else ""
    return f"<table{ident}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def digests_table(lock: dict) -> str:
    rows = []
    for kind, entries in sorted(lock.get("inputs", {}).items()):
        for name, digest in sorted(entries.items()):
            rows.append([kind, name, (f"<span class=\"mono\">{escape(digest)}</span>", "")])
    for role, tag in sorted(lock.get("image_tags", {}).items()):
        rows.append(["image tag", role, (f"<span class=\"mono\">{escape(tag)}</span>", "")])
    for name, ref in sorted(lock.get("arm_images", {}).items()):
        rows.append(["arm image", name, (f"<span class=\"mono\">{escape(ref.get('tag'))} {escape(ref.get('id'))}</span>", "")])
    for name, ins in sorted(lock.get("instructions", {}).items()):
        rows.append(["instructions", name, (f"<span class=\"mono\">{escape(ins.get('sha256'))}</span> ({escape(ins.get('bytes'))} bytes)", "")])
    return f"<details open><summary>{len(rows)} digests</summary>{html_table(['kind', 'name', 'digest'], rows, table_id='digests')}</details>"


def tables_page(kind: str, run_id: str, lock: dict, flags: list[str],
                tables: list[tuple[str, list[str], list[list[str]], str]]) -> str:
    """A protocol's page made of the tables the terminal prints (title, columns, rows, the note under it), for a
    protocol without a page of its own, so its report and the viewer show what the terminal showed."""
    body = "".join(f"<h2>{escape(title)}</h2>{html_table(columns, rows, table_id=f'table-{i}')}"
                   + (f"<p class=\"note\">{escape(note)}</p>" if note else "")
                   for i, (title, columns, rows, note) in enumerate(tables))
    return (protocol_page_head(kind, kind, run_id, lock, f"{lock.get('cells', '?')} cells",
                               [f"<li>{escape(f)}</li>" for f in flags])
            + body + "<h2>Digests</h2>" + digests_table(lock) + "</body></html>")


def write_page(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)  # a reader never sees half a page
    return path
