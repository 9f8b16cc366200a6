"""`memgrid view`: the site renders in headless Chromium (the index loads, a filter narrows the table, a
discarded cell's page names its reason), refers to nothing outside itself, pages long timelines, diffs an
artifact only against the fixture the cell started from; and it reads real run folders of every protocol."""

import gzip
import hashlib
import io
import json
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from synthetic_ledger import cell, write_run

from runner.results import view
from runner.results.cell_record import TEXT_CAP, read_cell
from test_report import _chromium

REPO = Path(__file__).resolve().parent.parent
STREAM = REPO / "tests" / "data" / "claude_stream" / "recall_connected.jsonl"
FIXTURE = REPO / "tasks" / "slug_ids" / "fixture"
CHANGED = "records/__init__.py"


def _tar(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _fixture_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _admitted_cell(cell_dir: Path, stream_lines: list[str], fixture: Path = FIXTURE) -> None:
    """The records a claude-code coding cell leaves: the recorded stream, a gateway record, proofs, the
    bundle manifest of the fixture it started from, and an artifact that changed one file."""
    cell_dir.mkdir(parents=True)
    with gzip.open(cell_dir / "claude.stream.jsonl.gz", "wt") as f:
        f.write("\n".join(stream_lines) + "\n")
    calls = [b for line in stream_lines for b in (json.loads(line).get("message") or {}).get("content") or []
             if isinstance(b, dict) and b.get("type") == "tool_use"]
    gateway = [{"kind": "model", "path": "/v1/messages", "status": 200, "seconds": 0.01, "tools": ["Read", "mcp__recall__search"],
                "tool_results": []}]
    gateway += [{"kind": "model", "path": "/v1/messages", "status": 200, "seconds": 0.01, "tools": ["Read", "mcp__recall__search"],
                 "tool_results": [{"call": c["id"], "tool": c["name"], "chars": 5, "text": "hits!", "is_error": False}]}
                for c in calls[:2]]
    (cell_dir / "gateway.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gateway))
    (cell_dir / "proof.json").write_text(json.dumps({"admitted": True, "discard_reason": None, "bundle_digest": "b" * 64,
                                                     "proofs": [{"name": "mcp_connected", "passed": True,
                                                                 "detail": "server recall: connected"}]}))
    files = _fixture_files(fixture)
    (cell_dir / "bundle.manifest").write_text("".join(f"{hashlib.sha256(d).hexdigest()}  workspace/{n}\n"
                                                      for n, d in files.items()))
    files[CHANGED] = files[CHANGED].replace(b"raise NotImplementedError", b"return name  # memgrid-view-test")
    (cell_dir / "artifact.tar").write_bytes(_tar(files))
    (cell_dir / "checker.log").write_text("FAIL case 1\nSUMMARY: 2/8 cases passed\n")
    (cell_dir / "verdict.json").write_text(json.dumps({"passed": False, "fired": ["superseded"],
                                                       "detector_detail": "fired ['superseded']"}))


def _discarded_cell(cell_dir: Path) -> None:
    cell_dir.mkdir(parents=True)
    (cell_dir / "proof.json").write_text(json.dumps({"admitted": False, "discard_reason": "mcp_server_failed", "proofs": [
        {"name": "bundle_verified", "passed": True, "detail": "15 files match"},
        {"name": "mcp_connected", "passed": False, "detail": "server recall: failed"}]}))
    (cell_dir / "transcript.jsonl").write_text(json.dumps({"type": "init", "t": 1.0, "tools": ["Read"],
                                                           "mcp_servers": [{"name": "recall", "status": "failed"}]}) + "\n")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """Twelve admitted cells over arms bare and recall (each with a real recorded stream), and one recall
    cell discarded for a failed MCP server."""
    rows = []
    for t in range(6):
        for arm in ("bare", "recall"):
            rows.append(cell("slug_ids", arm, t % 2 == 0, seed=t, agent="claude-code", wall_seconds=1.0 + t,
                             tokens_fresh_input=100 * (t + 1), tokens_output=10, tokens_cache_read=0,
                             tokens_cache_creation=0, cost_usd=0.001 * t, damage_fired='["superseded"]'))
    rows.append(cell("slug_ids", "recall", None, seed=9, agent="claude-code", admitted=False,
                     discard_reason="mcp_server_failed", wall_seconds=0.5))
    run = write_run(tmp_path_factory.mktemp("runs") / "view-run", rows)
    lines = STREAM.read_text().splitlines()
    for r in rows:
        if r.admitted:
            _admitted_cell(run / "cells" / r.cell_id, lines)
        else:
            _discarded_cell(run / "cells" / r.cell_id)
    return run


@pytest.fixture(scope="module")
def site(run_dir, tmp_path_factory) -> view.Site:
    return view.build_site(run_dir, tmp_path_factory.mktemp("site") / "site", REPO)


def dom(page: str, profile: Path, screenshot: Path | None = None, height: int = 1400) -> str:
    """The page's DOM after its scripts ran (`page`: a file:// URL, with a fragment if any)."""
    base = [_chromium(), "--headless", "--disable-gpu", "--no-sandbox", f"--user-data-dir={profile}", "--hide-scrollbars",
            f"--window-size=1300,{height}"]
    out = subprocess.run([*base, "--dump-dom", page], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    if screenshot is not None:
        subprocess.run([*base, f"--screenshot={screenshot}", page], capture_output=True, timeout=120, check=True)
    return out.stdout


def visible_rows(document: str) -> list[str]:
    body = document[document.index('<table id="cells">'):]
    return re.findall(r"<tr (?![^>]*\bhidden\b)[^>]*data-arm=\"([^\"]+)\"", body[:body.index("</table>")])


def test_index_loads_and_a_filter_narrows_the_table(site, tmp_path):
    index = site.index.as_uri()
    everything = dom(index, tmp_path / "p1")
    assert 'data-ready="1"' in everything and 'data-shown="13"' in everything
    assert len(visible_rows(everything)) == 13
    recall = dom(index + "#arm=recall", tmp_path / "p2")
    assert visible_rows(recall) == ["recall"] * 7 and 'data-shown="7"' in recall
    discarded = dom(index + "#outcome=discarded", tmp_path / "p3", tmp_path / "index.png")
    assert 'data-shown="1"' in discarded
    row = re.search(r'<tr (?![^>]*\bhidden\b)[^>]*data-outcome="discarded"[^>]*>(.*?)</tr>', discarded, re.S).group(1)
    assert "mcp_server_failed" in row
    # the select shows the filter the fragment set, and the "discarded" link is that filter
    assert re.search(r'<a id="show-discarded" href="#outcome=discarded">discarded: 1</a>', everything)


def test_sorting_by_tokens_puts_unobserved_last(site, tmp_path):
    tokens = re.findall(r'<tr (?![^>]*\bhidden\b)[^>]*data-tokens="([^"]*)"', dom(site.index.as_uri() + "#sort=-tokens",
                                                                                      tmp_path / "p"))
    observed = [int(t) for t in tokens if t]
    assert observed == sorted(observed, reverse=True) and tokens[-1] == "" and len(tokens) == 13


def test_a_discarded_cells_page_names_its_reason_and_failing_proof(site, run_dir, tmp_path):
    cell_id = "claude-code-slug_ids-recall-9-present"
    page = dom((site.index.parent / "cells" / f"{cell_id}.html").as_uri(), tmp_path / "p", tmp_path / "discarded.png")
    assert re.search(r'id="discard-reason">mcp_server_failed<', page)
    proofs = page[page.index('id="proofs-session"'):]
    assert re.search(r"mcp_connected</td><td><span class=\"fail\">FAIL</span></td><td>server recall: failed", proofs)


def test_an_admitted_cells_page_shows_the_timeline_proofs_checker_damage_and_diff(site, tmp_path):
    cell_id = "claude-code-slug_ids-recall-0-present"
    page = dom((site.index.parent / "cells" / f"{cell_id}.html").as_uri(), tmp_path / "p", tmp_path / "admitted.png",
               height=3000)
    assert 'id="verdict"' in page and "admitted" in page
    assert "init: " in page and "MCP servers: recall: connected" in page
    assert page.count('class="step tool_call') == 13  # every call of the recorded session, each with its result
    assert page.count('class="step model_request') == 3  # the gateway's requests, with the tools they offered
    assert "tokens: fresh input" in page
    assert "SUMMARY: 2/8 cases passed" in page and "fired: superseded" in page
    assert "+    return name  # memgrid-view-test" in page and f"artifact/{CHANGED}" in page


def test_the_site_refers_to_nothing_outside_itself(site):
    root = site.index.parent
    for path in root.rglob("*.html"):
        text = path.read_text()
        assert "<link" not in text and "@import" not in text and "url(" not in text, path
        for target in re.findall(r'(?:src|href)="([^"#]+)', text):
            if target.startswith("data:"):  # the report page's embedded plots
                continue
            assert "://" not in target and not target.startswith("/"), (path, target)
            assert (path.parent / target).resolve().is_file(), (path, target)


def test_the_requests_go_after_the_calls_whose_results_they_delivered(run_dir):
    record = read_cell(run_dir / "cells" / "claude-code-slug_ids-recall-0-present", FIXTURE)
    kinds = [(s.kind, s.title) for s in record.phases[0].steps]
    first_call = next(i for i, (k, _) in enumerate(kinds) if k == "tool_call")
    requests = [i for i, (k, _) in enumerate(kinds) if k == "model_request"]
    assert requests[0] < first_call  # delivered nothing: the opening request, after init
    assert requests[1] == first_call + 1  # delivered the first call's result: right after it


def test_long_timelines_are_paged_and_long_texts_cut(tmp_path):
    lines = STREAM.read_text().splitlines()
    assistant = next(l for l in lines if '"tool_use"' in l)
    many = [lines[0]]
    for i in range(95):  # 95 calls, each with a result longer than a page may inline
        event = json.loads(assistant)
        event["message"]["id"] = f"msg_{i}"
        event["message"]["content"][0]["id"] = f"toolu_{i}"
        many.append(json.dumps(event))
        many.append(json.dumps({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "x" * (TEXT_CAP * 3)}]}}))
    run = write_run(tmp_path / "long-run", [cell("slug_ids", "recall", True, agent="claude-code")])
    _admitted_cell(run / "cells" / "claude-code-slug_ids-recall-0-present", many)
    out = view.build_site(run, tmp_path / "site", REPO).index.parent / "cells"
    main = (out / "claude-code-slug_ids-recall-0-present.html").read_text()
    pages = sorted(p.name for p in out.glob("claude-code-slug_ids-recall-0-present-session-*.html"))
    steps = 1 + 95 + 3  # init, the calls, the gateway's requests
    assert len(pages) == -(-steps // view.PAGE_STEPS) - 1
    assert main.count('class="step ') == view.PAGE_STEPS
    assert f"first {TEXT_CAP:,} of {TEXT_CAP * 3:,} characters" in main
    assert "x" * (TEXT_CAP + 1) not in main and all("x" * (TEXT_CAP + 1) not in (out / p).read_text() for p in pages)


def test_a_fixture_changed_since_the_run_is_not_passed_off_as_the_start(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(FIXTURE, project / "fixture")
    cell_dir = tmp_path / "cell"
    _admitted_cell(cell_dir, STREAM.read_text().splitlines(), project / "fixture")
    honest = read_cell(cell_dir, project / "fixture")
    assert [d.path for d in honest.diff] == [CHANGED] and not honest.diff_note
    (project / "fixture" / CHANGED).write_text("edited after the run\n")
    edited = read_cell(cell_dir, project / "fixture")
    assert edited.diff == [] and f"changed since the run, not diffed: {CHANGED}" in edited.diff_note


def test_view_command_prints_the_site_and_refuses_a_folder_that_is_not_a_site(run_dir, tmp_path):
    def memgrid(*args):
        return subprocess.run([sys.executable, "-c", "from runner.cli import main; main()", *args], capture_output=True,
                              text=True, cwd=REPO, timeout=300)

    out = memgrid("view", str(run_dir), "--out", str(tmp_path / "s"))
    assert out.returncode == 0, out.stderr
    assert f"site: {tmp_path / 's' / 'index.html'} (14 pages" in out.stdout
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    refused = memgrid("view", str(run_dir), "--out", str(tmp_path / "mine"))
    assert refused.returncode == 2 and "is not a memgrid site" in refused.stderr and "Traceback" not in refused.stderr
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_a_failed_build_leaves_the_previous_site_whole(run_dir, tmp_path, monkeypatch):
    out = tmp_path / "site"
    before = view.build_site(run_dir, out, REPO)
    pages = sorted(p.name for p in out.rglob("*.html"))

    def broken(*args):
        raise ValueError("a page that cannot be rendered")

    monkeypatch.setattr(view, "index_page", broken)
    with pytest.raises(ValueError):
        view.build_site(run_dir, out, REPO)
    assert sorted(p.name for p in out.rglob("*.html")) == pages and before.index.is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["site"]  # nothing half-built left beside it


def test_the_index_says_the_run_stopped_at_its_budget_and_which_cells_reached_a_cap(tmp_path):
    from runner.exec.run import Budget, record_budget_stop

    run = write_run(tmp_path / "stopped", [cell("slug_ids", "recall", False, agent="claude-code", cost_usd=0.4,
                                                 error_class="budget_exhausted")])
    budget = Budget(1.0)
    budget.add(0.4)
    budget.add(0.4)
    record_budget_stop(run, budget.stop_record(3))
    index = view.build_site(run, tmp_path / "site", REPO).index.read_text()
    assert re.search(r'class="fail budget-stop">stopped at its budget at \S+: spent \$0.8000 of \$1.0000', index)
    assert "3 cells not started" in index and "(budget_exhausted)" in index


def test_serve_answers_the_site_on_this_machine_only(run_dir, tmp_path):
    import socket
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-c", "from runner.cli import main; main()", "view", str(run_dir), "--out",
                               str(tmp_path / "s"), "--serve", "--port", str(port)], cwd=REPO, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        deadline, page = time.monotonic() + 60, None
        while page is None and time.monotonic() < deadline:
            try:
                page = urllib.request.urlopen(f"http://127.0.0.1:{port}/index.html", timeout=5).read().decode()
            except OSError:
                time.sleep(0.2)
        assert page is not None and 'id="cells"' in page
        listening = [c for c in __import__("psutil").Process(server.pid).net_connections() if c.status == "LISTEN"]
        assert [c.laddr.ip for c in listening] == ["127.0.0.1"]
    finally:
        server.terminate()
        server.wait(timeout=30)


# ---------------------------------------------------------------- real run folders of every protocol

def _grid(run_id, tmp_path, spec: dict) -> Path:
    from runner.exec.job import run_grid
    from runner.plan.spec import grid_from_dict

    grid = grid_from_dict({"seeds": 1, **spec}, Path("(test grid)"))
    return run_grid(grid, Path("(test grid)"), root=REPO, run_id=run_id, runs_dir=tmp_path / "runs", concurrency=1,
                    progress=False, log=lambda m: None).run_dir


def _pages_of(site: view.Site) -> dict[str, str]:
    return {p.stem: p.read_text() for p in (site.index.parent / "cells").glob("*.html")}


def test_real_runs_of_every_protocol_become_sites(engine, images, run_id, tmp_path, no_leftovers, monkeypatch):
    from runner.agents import claude_code
    from runner.protocols.registry import PROTOCOLS

    monkeypatch.setattr(claude_code, "allowed_tools", lambda arm: list(claude_code.CORE_TOOLS))  # recall is denied
    coding = _grid(run_id, tmp_path, {"name": "v-coding", "tasks": ["slug_ids"], "arms": ["bare", "recall"],
                                      "agents": ["claude-code"], "conditions": ["present"], "model": "scripted"})
    two = _grid(f"{run_id}-ts", tmp_path, {"name": "v-ts", "protocol": "two-session", "cases": 1, "arms": ["bare", "notes"],
                                          "agents": ["reader"], "conditions": ["closing_balance"]})
    task = sorted(PROTOCOLS["planted"].tasks(REPO))[0]
    planted = _grid(f"{run_id}-pl", tmp_path, {"name": "v-pl", "protocol": "planted", "tasks": [task], "arms": ["recall"],
                                              "agents": ["reader"], "conditions": ["on"]})

    pages = _pages_of(view.build_site(coding, tmp_path / "coding", REPO))
    bare, recall = (next(p for p in pages.values() if f"<td>arm</td><td>{arm}</td>" in p) for arm in ("bare", "recall"))
    assert 'id="discard-reason">permission_denied<' in recall and "memory_tools_permitted" in recall
    assert "model request /v1/messages" in bare and "tool call Write" in bare and "+++ artifact/" in bare

    pages = _pages_of(view.build_site(two, tmp_path / "two", REPO))
    assert len(pages) == 2
    for page in pages.values():
        assert "<h2>Phase step1" in page and "<h2>Phase step2" in page and 'id="proofs-step2"' in page
        assert "Protocol result (two-session)" in page and "the artifact" not in page

    site = view.build_site(planted, tmp_path / "planted", REPO)
    page, = _pages_of(site).values()
    assert "plant.json" in page and "forget.json" in page and "+++ artifact/" in page
    assert (site.index.parent / "report.html").is_file()


PWN = "document.body.setAttribute('data-pwned', '1')"
PAYLOADS = (f"<script>{PWN}</script>", f"<img src=x onerror=\"{PWN}\">", f"</pre></details><svg onload=\"{PWN}\">")


def test_what_the_agent_wrote_is_shown_as_text_never_run_in_the_reviewers_browser(tmp_path):
    """The attack: markup in everything a hostile agent controls (its tool inputs and results, what the gateway
    saw delivered, its artifact, the checker's log of it, a proof's evidence) must not run when a reviewer opens
    the cell; without escaping, the payload sets data-pwned on the page's body."""
    lines = STREAM.read_text().splitlines()
    hostile = "\n".join(PAYLOADS)
    events = []
    for line in lines:
        event = json.loads(line)
        for block in (event.get("message") or {}).get("content") or []:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                block["input"] = {"command": hostile}
            elif isinstance(block, dict) and block.get("type") == "tool_result":
                block["content"] = hostile
        events.append(json.dumps(event))
    run = write_run(tmp_path / "hostile-run", [cell("slug_ids", "recall", True, agent="claude-code")])
    cell_dir = run / "cells" / "claude-code-slug_ids-recall-0-present"
    _admitted_cell(cell_dir, events)
    gateway = [json.loads(l) for l in (cell_dir / "gateway.jsonl").read_text().splitlines()]
    for g in gateway:
        for r in g["tool_results"]:
            r["text"] = hostile
    (cell_dir / "gateway.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gateway))
    files = _fixture_files(FIXTURE)
    files[CHANGED] = hostile.encode()
    (cell_dir / "artifact.tar").write_bytes(_tar(files))
    (cell_dir / "checker.log").write_text(hostile)
    proof = json.loads((cell_dir / "proof.json").read_text())
    proof["proofs"][0]["detail"] = hostile
    (cell_dir / "proof.json").write_text(json.dumps(proof))

    page = view.build_site(run, tmp_path / "site", REPO).index.parent / "cells" / f"{cell_dir.name}.html"
    source = page.read_text()
    assert "&lt;script&gt;" in source and "&lt;img src=x" in source  # the payload is on the page, as text
    assert not any(p in source for p in PAYLOADS)
    document = dom(page.as_uri(), tmp_path / "p", height=3000)
    assert 'data-pwned="1"' not in document
