"""Build, verify and probe the condition corpora, one set per task suite (memgrid's own: corpus/;
another suite's: corpus/suites/<suite>/), each generated from its own suite's tasks alone.

<corpus folder>/build/<condition>/seed-<n>/
  docs/<name>.jsonl   one session per file; names are a hash of salt + logical path, so they reveal no role
  MANIFEST.sha256     sha256sum format over docs/; its own sha256 is the corpus digest
  key.json            name -> {task, role, file} for planted documents (the answer key; never enters a sandbox)
  meta.json           scale, seed, generator digest, counts, the contradictory date orders

The haystack is the same in every condition of a seed; only the tasks' plants differ.
"""

import json
import os
import random
import shutil
import tempfile
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import yaml

from runner.corpus import haystack
from runner.digest import sha256_bytes, sha256_file, sha256_json
from runner.errors import UserError
from runner.hostlock import host_lock
from runner.plan.spec import CONDITIONS, DEFAULT_SUITE, TaskSpec, read_yaml, suite_named, validate

MANIFEST = "MANIFEST.sha256"


@dataclass(frozen=True)
class CorpusSettings:
    scale: int
    seeds: tuple[int, ...]
    salt: str
    start: date
    end: date
    root: Path  # the suite's corpus folder: corpus/, or corpus/suites/<suite>/

    @property
    def build_dir(self) -> Path:
        return self.root / "build"

    @property
    def digests_path(self) -> Path:
        return self.root / "digests.yaml"

    def condition_dir(self, condition: str, seed: int, build_dir: Path | None = None) -> Path:
        return (build_dir or self.build_dir) / condition / f"seed-{seed}"


def load_settings(project_root: Path, suite: str = DEFAULT_SUITE) -> CorpusSettings:
    folder = project_root / "corpus" if suite == DEFAULT_SUITE else suite_named(project_root, suite).corpus_dir
    path = folder / "corpus.yaml"
    if suite != DEFAULT_SUITE and not path.is_file():
        raise UserError(f"{path}: missing: the corpus settings of suite '{suite}': fix: copy corpus/corpus.yaml there "
                        f"and give it a salt of its own (memgrid task import writes one)")
    data = read_yaml(path)
    validate(data, "corpus", path)
    return CorpusSettings(data["scale"], tuple(data["seeds"]), data["salt"], date.fromisoformat(data["start"]),
                          date.fromisoformat(data["end"]), path.parent)


def generator_digest(settings: CorpusSettings, tasks: list[TaskSpec]) -> str:
    """Everything the haystack is a function of besides the seed: code, vocabulary, scale, prompts, terms."""
    files = [[p.name, sha256_file(p)] for p in haystack.generator_files()]
    return sha256_json({"files": files, "scale": settings.scale, "salt": settings.salt,
                        "prompts": [t.prompt for t in tasks], "terms": sorted(reserved_terms(tasks))})


def reserved_terms(tasks: list[TaskSpec]) -> list[str]:
    """Phrases no haystack document may contain: every fact term and every wrong-rule marker."""
    return sorted({term for t in tasks for term in t.fact_terms + tuple(m for ms in t.wrong_rules.values() for m in ms)})


def doc_name(settings: CorpusSettings, seed: int, logical: str) -> str:
    return sha256_bytes(f"{settings.salt}:{seed}:{logical}".encode())[:20]


def stamp(events, session: str, start: datetime, rng: random.Random) -> str:
    """The transcript as JSONL with its session id and timestamps a few seconds to minutes apart."""
    lines, t = [], start
    for event in events:
        lines.append(json.dumps({"session": session, "ts": t.strftime("%Y-%m-%dT%H:%M:%SZ"), **event}, sort_keys=True))
        t += timedelta(seconds=rng.randint(4, 150))
    return "\n".join(lines) + "\n"


def random_start(settings: CorpusSettings, rng: random.Random, lo: date | None = None, hi: date | None = None) -> datetime:
    lo, hi = lo or settings.start, hi or settings.end
    day = lo + timedelta(days=rng.randint(0, max(0, (hi - lo).days)))
    return datetime(day.year, day.month, day.day, rng.randint(7, 21), rng.randint(0, 59), rng.randint(0, 59), tzinfo=timezone.utc)


def read_events(path: Path) -> list[dict]:
    # utf-8-sig: a byte-order mark before the first line belongs to the file, not to its first event
    return [json.loads(line) for line in path.read_text(encoding="utf-8-sig").splitlines() if line.strip()]


def plant_documents(settings: CorpusSettings, task: TaskSpec, condition: str, seed: int) -> tuple[list[tuple], dict]:
    """This task's transcripts for one condition, dated oldest first (contradictory: order permuted per seed).

    Returns [(name, text, key entry)] and what was decided (the date order), for meta.json.
    """
    if task.plants is None or condition not in task.conditions:
        return [], {}
    roles = list(task.plants.conditions.get(condition, ()))
    rng = random.Random(f"{settings.salt}:{seed}:{task.id}:{condition}")
    if condition == "contradictory":
        rng.shuffle(roles)  # undated rivals: which one looks newer is a coin flip per seed, recorded
    files = [(role, f) for role in roles for f in task.plants.roles[role]]
    if not files:
        return [], {}
    span = (settings.end - settings.start).days
    first = settings.start + timedelta(days=rng.randint(0, span // 3))
    docs, when = [], first
    for i, (role, f) in enumerate(files):
        start = random_start(settings, rng, when, when)
        name = doc_name(settings, seed, f"plant/{task.id}/{f}")
        text = stamp(read_events(task.root / f), name, start, rng)
        docs.append((name, text, {"task": task.id, "role": role, "file": f, "date": start.date().isoformat()}))
        when = when + timedelta(days=rng.randint(20, max(21, span // (len(files) + 1))))
    return docs, {"order": [f"{r}:{f}" for r, f in files]}


def haystack_documents(settings: CorpusSettings, tasks: list[TaskSpec], seed: int) -> list[tuple[str, str]]:
    docs = haystack.generate(settings.scale, seed, [t.prompt for t in tasks], reserved_terms(tasks))
    rng = random.Random(f"{settings.salt}:{seed}:haystack-dates")
    out = []
    for i, doc in enumerate(docs):
        name = doc_name(settings, seed, f"haystack/{i}")
        out.append((name, stamp(doc.events, name, random_start(settings, rng), rng)))
    return out


def write_condition(target: Path, hay: list[tuple[str, str]], plants: list[tuple], meta: dict) -> str:
    """Write one condition x seed into a fresh folder, then swap it in; returns the corpus digest."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    docs_dir = tmp / "docs"
    docs_dir.mkdir()
    manifest, key = [], {}
    for name, text, *entry in [(n, t) for n, t in hay] + plants:
        data = text.encode()
        (docs_dir / f"{name}.jsonl").write_bytes(data)
        manifest.append(f"{sha256_bytes(data)}  docs/{name}.jsonl\n")
        if entry:
            key[name] = entry[0]
    manifest_text = "".join(sorted(manifest, key=lambda l: l.split("  ", 1)[1]))
    (tmp / MANIFEST).write_text(manifest_text)
    (tmp / "key.json").write_text(json.dumps(key, indent=1, sort_keys=True) + "\n")
    digest = sha256_bytes(manifest_text.encode())
    (tmp / "meta.json").write_text(json.dumps({**meta, "documents": len(manifest), "digest": digest}, indent=1, sort_keys=True) + "\n")
    if target.exists():
        shutil.rmtree(target)
    os.replace(tmp, target)
    return digest


def build(settings: CorpusSettings, tasks: list[TaskSpec], conditions=CONDITIONS, seeds=None, build_dir: Path | None = None,
          log=print) -> dict[str, dict[int, str]]:
    """Build every condition x seed; returns {condition: {seed: digest}}."""
    gen = generator_digest(settings, tasks)
    digests: dict[str, dict[int, str]] = {c: {} for c in conditions}
    for seed in seeds or settings.seeds:
        hay = haystack_documents(settings, tasks, seed)
        for condition in conditions:
            plants, orders = [], {}
            for t in tasks:
                docs, decided = plant_documents(settings, t, condition, seed)
                plants += docs
                if decided:
                    orders[t.id] = decided["order"]
            meta = {"condition": condition, "seed": seed, "scale": settings.scale, "generator_digest": gen,
                    "haystack": len(hay), "planted": len(plants), "plant_order": orders}
            digests[condition][seed] = write_condition(settings.condition_dir(condition, seed, build_dir), hay, plants, meta)
            log(f"{condition} seed {seed}: {len(hay) + len(plants)} documents ({len(plants)} planted), digest {digests[condition][seed][:12]}")
    return digests


def save_digests(settings: CorpusSettings, tasks: list[TaskSpec], digests: dict[str, dict[int, str]]) -> None:
    existing = read_yaml(settings.digests_path) if settings.digests_path.exists() else {}
    recorded = existing.get("digests", {}) if existing.get("generator_digest") == generator_digest(settings, tasks) else {}
    for condition, by_seed in digests.items():  # seeds as text keys: the spec reader allows no others
        recorded.setdefault(condition, {}).update({str(seed): d for seed, d in by_seed.items()})
    doc = {"generator_digest": generator_digest(settings, tasks), "digests": recorded}
    header = "# Written by `memgrid corpus build`; commit it. `memgrid corpus build --check` compares a rebuild with it.\n"
    settings.digests_path.write_text(header + yaml.safe_dump(doc, sort_keys=True))


def check(settings: CorpusSettings, tasks: list[TaskSpec], conditions=CONDITIONS, seeds=None, log=print) -> list[str]:
    """Rebuild in a scratch folder and compare with the committed digests; returns the differences."""
    if not settings.digests_path.exists():
        raise UserError(f"{settings.digests_path}: missing: fix: run 'memgrid corpus build' and commit the file")
    recorded = read_yaml(settings.digests_path)
    problems = []
    if recorded.get("generator_digest") != generator_digest(settings, tasks):
        problems.append(f"generator digest changed ({str(recorded.get('generator_digest'))[:12]} -> "
                        f"{generator_digest(settings, tasks)[:12]}): the generator, its data, corpus.yaml or a task's "
                        "prompt or fact terms changed; rebuild with 'memgrid corpus build' and commit corpus/digests.yaml")
        return problems
    with tempfile.TemporaryDirectory(prefix="memgrid-corpus-check-") as scratch:
        rebuilt = build(settings, tasks, conditions, seeds, Path(scratch), log=log)
    for condition, by_seed in rebuilt.items():
        for seed, digest in by_seed.items():
            want = recorded["digests"].get(condition, {}).get(str(seed))
            if want is None:
                problems.append(f"{condition} seed {seed}: no recorded digest (run 'memgrid corpus build' and commit)")
            elif want != digest:
                problems.append(f"{condition} seed {seed}: rebuilt digest {digest[:12]} != recorded {want[:12]}")
    return problems


def verify_dir(path: Path) -> list[str]:
    """Every byte of a built condition against its manifest; names the offending file."""
    manifest_path = path / MANIFEST
    if not manifest_path.is_file():
        return [f"{manifest_path}: missing (run 'memgrid corpus build')"]
    problems, listed = [], {}
    for n, line in enumerate(manifest_path.read_text().splitlines(), 1):
        digest, _, rel = line.partition("  ")
        if rel.startswith("/") or ".." in Path(rel).parts or not rel.startswith("docs/"):
            problems.append(f"{manifest_path}:{n}: path escapes the corpus root: {rel!r}")
            continue
        listed[rel] = digest
    docs = path / "docs"
    for p in sorted(docs.rglob("*")) if docs.is_dir() else []:
        rel = p.relative_to(path).as_posix()
        if p.is_symlink():
            problems.append(f"{p}: symbolic link (corpora hold regular files only)")
        elif p.is_dir():
            problems.append(f"{p}: unexpected folder")
        elif rel not in listed:
            problems.append(f"{p}: not in the manifest")
        elif sha256_file(p) != listed.pop(rel):
            problems.append(f"{p}: content does not match the manifest")
        else:
            continue
        listed.pop(rel, None)
    problems += [f"{path / rel}: listed in the manifest but missing" for rel in listed]
    return problems


def corpus_text(path: Path) -> str:
    """The searchable text of one document: every event's content and tool input."""
    parts = []
    for event in read_events(path):
        parts.append(event.get("content", ""))
        if "tool_input" in event:
            parts.append(json.dumps(event["tool_input"]))
    return "\n".join(parts)


def session_text(path: Path) -> str:
    """A transcript's text as its author wrote it: every event's content and the strings of its tool input, decoded
    from JSON. The file itself escapes a backslash, a quote or a line ending (a term written `\\r\\n line endings`
    is stored `\\\\r\\\\n line endings`), so a phrase is looked for here, never in the file's raw text."""
    return events_text(read_events(path))


def events_text(events: list[dict]) -> str:
    """Transcript events' content and tool-input strings, one per line (session_text, for events not on disk)."""
    def strings(value):
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            for v in value.values():
                yield from strings(v)
        elif isinstance(value, list):
            for v in value:
                yield from strings(v)

    return "\n".join(s for event in events for s in strings([event.get("content", ""), event.get("tool_input", {})]))


def phrases_by_role(task: TaskSpec) -> dict[str, tuple[str, ...]]:
    """The phrases each of a task's roles alone may hold: fact terms, and each wrong rule's markers."""
    roles = {"superseded": "stale", "contradictory": "rival", "adjacent": "adjacent"}
    return {"fact": task.fact_terms, **{roles[c]: m for c, m in task.wrong_rules.items()}}


def locus_findings(path: Path, tasks: list[TaskSpec]) -> list[str]:
    """Fact terms and wrong-rule markers in a built corpus: only in their own task's documents of that role."""
    key = json.loads((path / "key.json").read_text())
    problems = []
    for doc in sorted((path / "docs").glob("*.jsonl")):
        text = session_text(doc).lower()
        entry = key.get(doc.stem)
        for t in tasks:
            for role, phrases in phrases_by_role(t).items():
                if entry is not None and entry["task"] == t.id and entry["role"] == role:
                    continue
                for phrase in phrases:
                    if phrase.lower() in text:
                        where = f"{entry['task']}/{entry['file']}" if entry else "the haystack"
                        problems.append(f"{doc}: '{phrase}' ({role} of task {t.id}) appears in {where}")
    return problems


@dataclass(frozen=True)
class ProbeResult:
    condition: str
    seed: int
    task: str
    rank: int | None  # 1-based rank of the best fact document; None: not in the top 100

    def hit(self, k: int) -> bool:
        return self.rank is not None and self.rank <= k


def probe(settings: CorpusSettings, tasks: list[TaskSpec], conditions=CONDITIONS, seeds=None,
          build_dir: Path | None = None) -> list[ProbeResult]:
    """BM25 (bm25s) over each built condition with the task prompt as the query: where do the fact documents rank?"""
    import bm25s

    results = []
    for seed in seeds or settings.seeds:
        for condition in conditions:
            path = settings.condition_dir(condition, seed, build_dir)
            if not (path / MANIFEST).is_file():
                raise UserError(f"{path}: not built: fix: run 'memgrid corpus build'")
            key = json.loads((path / "key.json").read_text())
            facts = {t.id: {n for n, e in key.items() if e["task"] == t.id and e["role"] == "fact"} for t in tasks}
            asked = [t for t in tasks if facts[t.id]]
            if not asked:
                continue
            docs = sorted((path / "docs").glob("*.jsonl"))
            names = [d.stem for d in docs]
            retriever = bm25s.BM25()
            retriever.index(bm25s.tokenize([corpus_text(d) for d in docs], stopwords="en", show_progress=False),
                            show_progress=False)
            hits, _ = retriever.retrieve(bm25s.tokenize([t.prompt for t in asked], stopwords="en", show_progress=False),
                                         k=min(100, len(docs)), show_progress=False)
            for t, row in zip(asked, hits):
                ranked = [names[i] for i in row]
                rank = next((i + 1 for i, n in enumerate(ranked) if n in facts[t.id]), None)
                results.append(ProbeResult(condition, seed, t.id, rank))
    return results


def render_session(jsonl: str) -> str:
    """A session as readable text: what an agent with `grep` over memory/ sees."""
    lines = []
    for raw in jsonl.splitlines():
        if not raw.strip():
            continue
        event = json.loads(raw)
        head = f"[{event.get('ts', '')}] {event['role']}"
        if event.get("tool_name"):
            head += f" ({event['tool_name']})"
        lines.append(f"{head}: {event.get('content', '')}")
        if "tool_input" in event:
            lines.append(f"    input: {json.dumps(event['tool_input'], sort_keys=True)}")
    return "\n".join(lines) + "\n"


def ensure_built(settings: CorpusSettings, tasks: list[TaskSpec], pairs, log=print) -> dict[tuple[str, int], str]:
    """Build what is missing or stale for these (condition, seed) pairs, verify each; returns their digests."""
    gen = generator_digest(settings, tasks)
    digests = {}
    # Two grids (or two test workers) finding the same corpus missing would both build it, and the second's
    # swap-in removes the folder the first is already verifying or reading: one builds, the other waits and
    # finds it current.
    with host_lock(settings.build_dir, "corpus"):
        for condition, seed in sorted(set(pairs)):
            path = settings.condition_dir(condition, seed)
            meta = path / "meta.json"
            if not meta.is_file() or json.loads(meta.read_text()).get("generator_digest") != gen:
                log(f"building corpus {condition} seed {seed}")
                build(settings, tasks, (condition,), (seed,), log=log)
            problems = verify_dir(path)
            if problems:
                raise UserError(f"corpus {condition} seed {seed} does not verify ({problems[0]}): fix: run 'memgrid corpus build'")
            digests[(condition, seed)] = sha256_file(path / MANIFEST)
    return digests


class CorpusChanged(Exception):
    """The corpus on disk is no longer the one the run was locked to (another process rebuilt it)."""


class MemorySource:
    """The built corpus as the sandbox receives it, rendered once per document and shared by every cell.

    With `locked` (the digests the run recorded in run.json), every read is checked against them: the
    corpus is read lazily over the whole run, and another process (a grid after a generator change,
    `memgrid corpus build`) may rebuild it meanwhile. A cell then fails as a harness error naming the
    change, never quietly reading another corpus than the one its run is locked to."""

    def __init__(self, settings: CorpusSettings, build_dir: Path | None = None,
                 locked: dict[tuple[str, int], str] | None = None):
        self.settings, self.build_dir, self.locked = settings, build_dir, locked
        self._rendered: dict[str, bytes] = {}  # source sha256 -> rendered text (the haystack repeats across conditions)

    def _manifest(self, condition: str, seed: int) -> tuple[Path, str]:
        path = self.settings.condition_dir(condition, seed, self.build_dir)
        text = (path / MANIFEST).read_text()
        expected = (self.locked or {}).get((condition, seed))
        if expected is not None and sha256_bytes(text.encode()) != expected:
            raise CorpusChanged(f"corpus {condition} seed {seed} changed under the run (manifest "
                                f"{sha256_bytes(text.encode())[:12]} != locked {expected[:12]}): another process rebuilt it")
        return path, text

    def _read(self, path: Path, digest: str) -> str:
        data = path.read_bytes()
        if self.locked is not None and sha256_bytes(data) != digest:
            raise CorpusChanged(f"{path}: changed under the run (sha256 {sha256_bytes(data)[:12]} != manifest {digest[:12]})")
        return data.decode("utf-8")

    def _render(self, path: Path, digest: str) -> bytes:
        if digest not in self._rendered:
            self._rendered[digest] = render_session(self._read(path, digest)).encode()
        return self._rendered[digest]

    def documents(self, condition: str, seed: int) -> list[tuple[str, bytes]]:
        """Every document of the condition, rendered: [(name, text)] in name order."""
        path, manifest = self._manifest(condition, seed)
        out = []
        for line in manifest.splitlines():
            digest, _, rel = line.partition("  ")
            out.append((Path(rel).stem, self._render(path / rel, digest)))
        return out

    def evidence(self, task: TaskSpec, condition: str, seed: int) -> str:
        """Exactly this task's planted documents for the condition, oldest first; empty under absent."""
        path, manifest = self._manifest(condition, seed)
        digests = {Path(rel).stem: digest for digest, _, rel in (l.partition("  ") for l in manifest.splitlines())}
        key = json.loads((path / "key.json").read_text())
        mine = sorted(((e["date"], name) for name, e in key.items() if e["task"] == task.id))
        return "\n".join(f"## memory {i + 1} ({day})\n\n" + render_session(self._read(path / "docs" / f"{name}.jsonl", digests[name]))
                         for i, (day, name) in enumerate(mine))
