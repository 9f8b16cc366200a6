"""The haystack: thousands of seeded distractor sessions that make retrieval from the memory corpus hard.

A 196-document corpus saturated (BM25 hit@10 = 1.0), so every condition corpus is padded with
generated agent sessions in four tiers:

  background  ordinary coding sessions on assorted fictional projects
  topical     sessions in the tasks' areas (timestamps, exit codes, ids, CSV, retries...) about
              other components, deciding nothing about a convention
  near_miss   sessions that reuse the words and identifiers of the task prompts but settle a
              different thing, so a keyword search for a prompt finds them
  neighbour   sessions that confidently settle a convention of the same kind as the tasks'
              (a cron scheduler's timezone, a deploy script's exit codes) for other systems

Every word comes from the YAML files in corpus/haystack/, which researchers edit without reading
Python; this module is only the engine that expands their templates (the template language is
described at the top of corpus/haystack/beats.yaml). `generate` is a pure function of its
arguments and of `generator_files()`: documents are drawn from random.Random seeded with strings
(string seeds are hashed with SHA-512, so PYTHONHASHSEED and the process do not matter), and
nothing iterates a set or reads the clock.
"""

import hashlib
import re
import random
from collections import ChainMap
from dataclasses import dataclass
from pathlib import Path

import yaml

from runner.errors import SpecError, UserError

TIERS = ("background", "topical", "near_miss", "neighbour")
TIER_SHARES = {"background": 45, "topical": 25, "near_miss": 15, "neighbour": 15}  # percent
DATA_DIR = Path(__file__).resolve().parents[2] / "corpus" / "haystack"

# A document outside these bounds is drawn again: the corpus should look like real sessions,
# neither one-liners nor walls of logs.
MIN_EVENTS, MAX_EVENTS = 8, 40
MIN_CHARS, MAX_CHARS = 1_000, 12_000
MAX_ATTEMPTS = 64  # draws per document before giving up (a reserved term the vocabulary cannot avoid)
MAX_DEPTH = 8  # template nesting; deeper means a pool refers to itself

ROLES = ("user", "assistant", "tool")
EVENT_KEYS = ("role", "content", "tool_name", "tool_input")
BUILTIN_SLOTS = ("num",)  # {{num:LO-HI}}: a random whole number


class HaystackError(UserError):
    """The generator cannot produce a document (a reserved term it cannot avoid, a broken template)."""


@dataclass(frozen=True)
class HaystackDoc:
    tier: str  # "background" | "topical" | "near_miss" | "neighbour"
    events: tuple[dict, ...]  # {"role", "content", optional "tool_name", "tool_input"}; the corpus builder adds ts/session


def generator_files() -> list[Path]:
    """Every file whose content defines the generator, in a fixed order, for the caller's digest."""
    return [Path(__file__).resolve(), *sorted(DATA_DIR.glob("*.yaml"))]


# --- reserved terms --------------------------------------------------------------------------------

def _strings(node):
    """Every string in an event (keys included), depth first, in a fixed order."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for k, v in node.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(node, (list, tuple)):
        for v in node:
            yield from _strings(v)


def doc_text(doc: HaystackDoc) -> str:
    """All text of a document (contents, tool names, tool inputs), one field per line.

    Fields are joined with a newline, which no term contains, so a term is never found across two
    fields. This is also what the stats call a document's characters.
    """
    return "\n".join(s for event in doc.events for s in _strings(event))


def _first_hit(text_lower: str, terms_lower: list[tuple[str, str]]) -> str | None:
    for term, low in terms_lower:
        if low in text_lower:
            return term
    return None


def _lowered(reserved_terms) -> list[tuple[str, str]]:
    return [(t, t.lower()) for t in reserved_terms if t and t.strip()]


def contains_reserved(doc: HaystackDoc, reserved_terms: list[str]) -> str | None:
    """The first reserved term (in the given order) found case-insensitively anywhere in the document."""
    return _first_hit(doc_text(doc).lower(), _lowered(reserved_terms))


# --- templates ---------------------------------------------------------------------------------------

# {{name}}, {{name#2}}, {{name*2-5}}, {{num:1-40}}, {{name|pascal|a}}: see corpus/haystack/beats.yaml.
_SLOT = re.compile(r"\{\{\s*([a-z_][a-z0-9_]*)(?::(\d+)-(\d+))?(?:\*(\d+)-(\d+))?(?:#(\d+))?((?:\|[a-z]+)*)\s*\}\}")


@dataclass(frozen=True)
class _Slot:
    name: str
    lo: int | None
    hi: int | None
    rep: tuple[int, int] | None
    key: str | None  # sticky: the same pick for every use of name#key in one document
    filters: tuple[str, ...]


def _parse(template: str) -> tuple:
    """A template as alternating literal strings and _Slot records (cached: templates repeat a lot)."""
    parts, pos = [], 0
    for m in _SLOT.finditer(template):
        if m.start() > pos:
            parts.append(template[pos:m.start()])
        name, lo, hi, rlo, rhi, key, filters = m.groups()
        parts.append(_Slot(name, int(lo) if lo else None, int(hi) if hi else None,
                           (int(rlo), int(rhi)) if rlo else None, key,
                           tuple(f for f in filters.split("|") if f)))
        pos = m.end()
    if pos < len(template):
        parts.append(template[pos:])
    return tuple(parts)


_PARSED: dict[str, tuple] = {}


def _parts(template: str) -> tuple:
    parts = _PARSED.get(template)
    if parts is None:
        parts = _PARSED[template] = _parse(template)
    return parts


def _words(value: str) -> list[str]:
    return [w for w in re.split(r"[^A-Za-z0-9]+", value) if w]


def _numbered(value: str) -> str:
    # The look of a file read with line numbers (cat -n / the Read tool).
    return "\n".join(f"{i:>6}\t{line}" for i, line in enumerate(value.split("\n"), 1))


def _split_pair(value: str, which: int) -> str:
    # A pool entry in two parts separated by a line "~~~": an edit's old and new code, a question and its answer.
    head, sep, tail = value.partition("\n~~~\n")
    return (head, tail if sep else head)[which]


FILTERS = {
    "cap": lambda v: v[:1].upper() + v[1:],
    "upper": str.upper,
    "lower": str.lower,
    "pascal": lambda v: "".join(w[:1].upper() + w[1:] for w in _words(v)),
    "camel": lambda v: (lambda p: p[:1].lower() + p[1:])("".join(w[:1].upper() + w[1:] for w in _words(v))),
    "snake": lambda v: "_".join(w.lower() for w in _words(v)),
    "kebab": lambda v: "-".join(w.lower() for w in _words(v)),
    "a": lambda v: ("an " if v[:1].lower() in "aeio" else "a ") + v,
    "numbered": _numbered,
    "first": lambda v: _split_pair(v, 0),
    "second": lambda v: _split_pair(v, 1),
    "old": lambda v: _split_pair(v, 0),
    "new": lambda v: _split_pair(v, 1),
}


def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


# Values no pool could list: fresh random strings. Named in beats.yaml's header.
COMPUTED = {
    "sha": lambda r: _hex(r, 7),
    "longsha": lambda r: _hex(r, 40),
    "uuid": lambda r: f"{_hex(r, 8)}-{_hex(r, 4)}-4{_hex(r, 3)}-{r.choice('89ab')}{_hex(r, 3)}-{_hex(r, 12)}",
    "date": lambda r: f"20{r.randint(22, 24)}-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}",
    "clock": lambda r: f"{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}",
    "logtime": lambda r: f"20{r.randint(22, 24)}-{r.randint(1, 12):02d}-{r.randint(1, 28):02d} "
                         f"{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d},{r.randint(0, 999):03d}",
    "secs": lambda r: f"{r.uniform(0.04, 95):.2f}",
    "lineno": lambda r: str(r.randint(3, 420)),
    "port": lambda r: str(r.choice((5432, 6379, 8000, 8080, 8443, 9000, 9090, 9200, 5672, 11211, 3000, 4317))),
    "pid": lambda r: str(r.randint(1200, 64000)),
    "ticket": lambda r: f"{r.choice(('OPS', 'PLAT', 'DEV', 'BUG', 'INFRA', 'DATA', 'WEB', 'CORE', 'PAY', 'SUP'))}-{r.randint(40, 4999)}",
    "pr": lambda r: str(r.randint(12, 3900)),
    "version": lambda r: f"{r.randint(0, 9)}.{r.randint(0, 30)}.{r.randint(0, 15)}",
    "ip": lambda r: f"10.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(1, 254)}",
}


class _Doc:
    """The state of one document being drawn: its random stream, fixed values and sticky picks."""

    def __init__(self, rng: random.Random, pools, fixed: dict[str, str], where: str):
        self.rng, self.pools, self.fixed, self.where = rng, pools, fixed, where
        self.sticky: dict[tuple, str] = {}
        self.local: dict[tuple, str] = {}  # picks that hold within the current beat only
        self.used: dict[str, set] = {}  # sticky values already given per name (name#1 vs name#2)
        self.taken: dict[str, set] = {}  # pool entries already drawn per pool

    def fill(self, template: str, depth: int = 0) -> str:
        if depth > MAX_DEPTH:
            raise HaystackError(f"{DATA_DIR}: templates nest deeper than {MAX_DEPTH} levels near {template[:60]!r} "
                                f"({self.where}) — fix: a pool entry probably refers to its own pool")
        out = []
        for part in _parts(template):
            out.append(part if isinstance(part, str) else self._slot(part, depth))
        return "".join(out)

    def _slot(self, slot: _Slot, depth: int) -> str:
        if slot.key is not None:
            # name#0 holds within one beat (an Edit's old and new halves); name#1, #2... for the whole session.
            store = self.local if slot.key == "0" else self.sticky
            sk = (slot.name, slot.lo, slot.hi, slot.rep, slot.key)
            value = store.get(sk)
            if value is None:
                value = self._draw_distinct(slot, depth)
                store[sk] = value
        elif slot.rep:
            value = "\n".join(self._draw(slot, depth) for _ in range(self.rng.randint(*slot.rep)))
        else:
            value = self._draw(slot, depth)
        for f in slot.filters:
            value = FILTERS[f](value)
        return value

    def _draw_distinct(self, slot: _Slot, depth: int) -> str:
        # name#1 and name#2 should differ when the pool allows it: a session about two files
        # that are the same file reads wrong.
        used = self.used.setdefault(slot.name, set())
        for _ in range(4):
            value = (self._draw(slot, depth) if not slot.rep else
                     "\n".join(self._draw(slot, depth) for _ in range(self.rng.randint(*slot.rep))))
            if value not in used:
                break
        used.add(value)
        return value

    def _draw(self, slot: _Slot, depth: int) -> str:
        name = slot.name
        if name == "num":
            lo, hi = (slot.lo, slot.hi) if slot.lo is not None else (1, 9)
            return str(self.rng.randint(lo, hi))
        value = self.fixed.get(name)
        if value is not None:
            return value
        pool = self.pools.get(name)
        if pool is not None:
            return self.fill(pool[self._pick(name, len(pool))], depth + 1)
        maker = COMPUTED.get(name)
        if maker is not None:
            return maker(self.rng)
        raise HaystackError(f"{DATA_DIR}: {{{{{name}}}}} has no value in {self.where} — fix: define a pool or a "
                            f"let named '{name}' where this template can see it, or correct the spelling")

    def _pick(self, name: str, size: int) -> int:
        # Prefer an entry this session has not used yet: the same remark twice in one session
        # reads like a generator. A few tries only, so small pools still repeat when they must.
        taken = self.taken.setdefault(name, set())
        i = self.rng.randrange(size)
        for _ in range(3):
            if i not in taken:
                break
            i = self.rng.randrange(size)
        taken.add(i)
        return i

    def value(self, node):
        if isinstance(node, str):
            return self.fill(node)
        if isinstance(node, dict):
            return {k: self.value(v) for k, v in node.items()}
        if isinstance(node, list):
            return [self.value(v) for v in node]
        return node


# --- the data files ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Step:
    alts: tuple[str, ...]  # beat names; one is chosen each time (empty for a block)
    percent: int  # chance the step happens at all
    times: tuple[int, int]  # how many times it repeats
    block: tuple["_Step", ...] = ()  # a block's steps, which happen together or not at all


@dataclass(frozen=True)
class _Scope:
    let: tuple[tuple[str, tuple[str, ...]], ...]  # ordered: later bindings may use earlier ones
    pools: dict[str, tuple[str, ...]]


@dataclass(frozen=True)
class _Scenario:
    id: str
    weight: int
    steps: tuple[_Step, ...]
    scope: _Scope


@dataclass(frozen=True)
class _Group:
    id: str
    weight: int
    scope: _Scope
    scenarios: tuple[_Scenario, ...]


@dataclass(frozen=True)
class _Tier:
    name: str
    langs: tuple[str, ...]
    scope: _Scope
    groups: tuple[_Group, ...]
    scenarios: tuple[_Scenario, ...]


@dataclass(frozen=True)
class _Project:
    lang: str
    fixed: dict[str, str]
    domain: tuple[str, ...]


@dataclass(frozen=True)
class _World:
    scope: _Scope  # global lets and pools
    languages: dict[str, _Scope]
    projects: tuple[_Project, ...]
    beats: dict[str, tuple[tuple[dict, ...], ...]]  # beat -> variants -> event templates
    tiers: dict[str, _Tier]
    stopwords: frozenset[str]
    fallback_prompt: str


_STEP = re.compile(r"^(?P<alts>[a-z0-9_]+(?:\|[a-z0-9_]+)*)(?:\?(?P<pct>\d+)?)?(?:\*(?P<lo>\d+)-(?P<hi>\d+))?$")


def _fail(path: Path, field: str, problem: str, fix: str):
    raise SpecError(path, field, problem, fix)


def _str_list(value, path: Path, field: str) -> tuple[str, ...]:
    if isinstance(value, (str, int, float)):
        value = [value]
    if not isinstance(value, list) or not value:
        _fail(path, field, "is not a non-empty list of texts", "write a list of texts, one per '- ' line")
    out = []
    for i, v in enumerate(value):
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            _fail(path, f"{field}[{i}]", "is not a text", "quote it, or write it as a plain text line")
        out.append(str(v))
    return tuple(out)


def _int(value, path: Path, field: str, lo: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        _fail(path, field, f"is {value!r}, not a whole number of at least {lo}", f"write a number like {max(lo, 1)}")
    return value


def _scope(node: dict, path: Path, field: str) -> _Scope:
    let = node.get("let") or {}
    pools = node.get("pools") or {}
    if not isinstance(let, dict) or not isinstance(pools, dict):
        _fail(path, field, "has a 'let' or 'pools' that is not a mapping", "write 'name: [texts]' lines under it")
    return _Scope(tuple((str(k), _str_list(v, path, f"{field}.let.{k}")) for k, v in let.items()),
                  {str(k): _str_list(v, path, f"{field}.pools.{k}") for k, v in pools.items()})


def _steps(raw, path: Path, field: str) -> tuple[_Step, ...]:
    if not isinstance(raw, list) or not raw:
        _fail(path, field, "is not a non-empty list of steps", "write one step per '- ' line")
    steps = []
    for i, s in enumerate(raw):
        f = f"{field}[{i}]"
        if isinstance(s, dict):
            # A block of steps that happens together or not at all: {chance: 30, times: 1-2, steps: [...]}
            if "steps" not in s or any(k not in ("chance", "times", "steps") for k in s):
                _fail(path, f, "is not a block of steps", "write {chance: 30, steps: [beat, beat?]} (times: 1-2 optional)")
            times = re.fullmatch(r"(\d+)-(\d+)", str(s.get("times", "1-1")))
            if not times:
                _fail(path, f"{f}.times", "is not a range", "write it as LOW-HIGH, e.g. 1-2")
            steps.append(_Step((), _int(s.get("chance", 100), path, f"{f}.chance", 0), (int(times[1]), int(times[2])),
                               _steps(s["steps"], path, f"{f}.steps")))
            continue
        if not isinstance(s, str):
            _fail(path, f, "is not a step", "write beat, beat?, beat?30, beat*1-3, a|b, or a {chance:, steps:} block")
        m = _STEP.match(s.replace(" ", ""))
        if not m:
            _fail(path, f, f"'{s}' is not a step", "write beat, beat?, beat?30, beat*1-3 or a|b")
        pct = 100 if "?" not in s else int(m["pct"] or 50)
        steps.append(_Step(tuple(m["alts"].split("|")), pct, (int(m["lo"] or 1), int(m["hi"] or 1))))
    return tuple(steps)


def _scenarios(raw, path: Path, field: str) -> tuple[_Scenario, ...]:
    out = []
    for i, sc in enumerate(raw or []):
        f = f"{field}[{i}]"
        if not isinstance(sc, dict) or "steps" not in sc:
            _fail(path, f, "is not a scenario with steps", "give it 'id:' and a 'steps:' list")
        out.append(_Scenario(str(sc.get("id", f)), _int(sc.get("weight", 1), path, f"{f}.weight", 1),
                             _steps(sc["steps"], path, f"{f}.steps"),
                             _scope(sc, path, f)))
    return tuple(out)


def _event(ev, path: Path, field: str) -> dict:
    if not isinstance(ev, dict) or ev.get("role") not in ROLES:
        _fail(path, field, "is not an event with a role", f"give it 'role:' one of {', '.join(ROLES)}")
    extra = [k for k in ev if k not in EVENT_KEYS]
    if extra:
        _fail(path, f"{field}.{extra[0]}", "is not an event field", f"use only {', '.join(EVENT_KEYS)}")
    if ev["role"] == "tool" and "tool_name" not in ev:
        _fail(path, field, "is a tool result without tool_name", "add 'tool_name:' (the tool that produced it)")
    if "tool_input" in ev and ("tool_name" not in ev or not isinstance(ev["tool_input"], dict)):
        _fail(path, field, "has tool_input without tool_name, or not as a mapping", "add 'tool_name:' and write tool_input as a mapping")
    if not isinstance(ev.get("content", ""), str):
        _fail(path, f"{field}.content", "is not a text", "quote it")
    return {k: ev[k] for k in EVENT_KEYS if k in ev}


def _read(path: Path, raw: bytes) -> dict:
    try:
        data = yaml.load(raw.decode("utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except UnicodeDecodeError:
        raise SpecError(path, "(file)", "is not UTF-8 text", "save it as UTF-8") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise SpecError(path, f"line {mark.line + 1}" if mark else "(syntax)",
                        f"YAML syntax error: {getattr(e, 'problem', None) or e}", "fix the YAML syntax at that line") from None
    if not isinstance(data, dict):
        _fail(path, "(top level)", "is not a mapping of fields", "write 'field: value' lines")
    return data


def _load_world(files: tuple[tuple[str, bytes], ...]) -> _World:
    """Parse and check every data file; errors name the file, the field and the fix."""
    g_let: list = []
    g_pools: dict[str, tuple[str, ...]] = {}
    languages: dict[str, _Scope] = {}
    projects: list[_Project] = []
    beats: dict[str, tuple] = {}
    tiers: dict[str, _Tier] = {}
    stopwords: frozenset[str] = frozenset()
    fallback_prompt = ""
    pool_home: dict[str, Path] = {}
    sources: list[tuple[Path, dict]] = []
    for name, raw in files:
        path = DATA_DIR / name
        data = _read(path, raw)
        sources.append((path, data))
        scope = _scope(data, path, "(top level)")
        if "tier" in data:
            # A tier file: its lets and pools are seen only by that tier's documents.
            tier = str(data["tier"])
            if tier not in TIERS:
                _fail(path, "tier", f"'{tier}' is not a tier", f"use one of {', '.join(TIERS)}")
            groups = []
            for i, gr in enumerate(data.get("groups") or []):
                if not isinstance(gr, dict):
                    _fail(path, f"groups[{i}]", "is not a group", "give it 'id:', and 'let:' and/or 'pools:'")
                groups.append(_Group(str(gr.get("id", f"groups[{i}]")), _int(gr.get("weight", 1), path, f"groups[{i}].weight", 1),
                                     _scope(gr, path, f"groups[{i}]"), _scenarios(gr.get("scenarios"), path, f"groups[{i}].scenarios")))
            groups = tuple(groups)
            tiers[tier] = _Tier(tier, _str_list(data.get("langs", ["python"]), path, "langs"), scope, groups,
                                _scenarios(data.get("scenarios"), path, "scenarios"))
        else:
            # Any other file: its lets and pools are seen by every document.
            g_let.extend(scope.let)
            for k, v in scope.pools.items():
                if k in pool_home:
                    _fail(path, f"pools.{k}", f"is also defined in {pool_home[k].name}", "rename one of them or merge the lists")
                pool_home[k] = path
                g_pools[k] = v
            for lang, node in (data.get("languages") or {}).items():
                languages[str(lang)] = _scope(node, path, f"languages.{lang}")
        for i, p in enumerate(data.get("projects") or []):
            f = f"projects[{i}]"
            if not isinstance(p, dict) or not all(k in p for k in ("name", "lang", "pkg", "about", "domain")):
                _fail(path, f, "is not a project", "give it name, lang, pkg, about and domain")
            projects.append(_Project(str(p["lang"]), {"project": str(p["name"]), "pkg": str(p["pkg"]),
                                                      "about": str(p["about"]), "lang": str(p["lang"])},
                                     _str_list(p["domain"], path, f"{f}.domain")))
        for beat, variants in (data.get("beats") or {}).items():
            if not isinstance(variants, list) or not variants or not all(isinstance(v, list) and v for v in variants):
                _fail(path, f"beats.{beat}", "is not a list of variants (each a list of events)",
                      "write '- - role: ...' for the first event of each variant")
            if str(beat) in beats:
                _fail(path, f"beats.{beat}", "is defined twice", "rename one of them or merge their variants")
            beats[str(beat)] = tuple(tuple(_event(ev, path, f"beats.{beat}[{i}][{j}]") for j, ev in enumerate(v))
                                     for i, v in enumerate(variants))
        if "stopwords" in data:
            stopwords = frozenset(w.lower() for w in _str_list(data["stopwords"], path, "stopwords"))
        if "fallback_prompt" in data:
            fallback_prompt = str(data["fallback_prompt"])
    world = _World(_Scope(tuple(g_let), g_pools), languages, tuple(projects), beats, tiers, stopwords, fallback_prompt)
    _check_world(world, sources)
    return world


def _flat_steps(steps):
    for step in steps:
        yield step
        yield from _flat_steps(step.block)


def _check_world(world: _World, sources: list[tuple[Path, dict]]) -> None:
    """Cross-file checks: every tier exists, steps name beats, projects' languages are defined,
    and every {{placeholder}} in every file names a pool or binding defined somewhere."""
    path = DATA_DIR
    for tier in TIERS:
        t = world.tiers.get(tier)
        if t is None:
            _fail(path, "tier", f"no data file declares 'tier: {tier}'", f"add {tier}.yaml")
        if not t.scenarios and not any(g.scenarios for g in t.groups):
            _fail(path / f"{tier}.yaml", "scenarios", "is empty", "add at least one scenario")
        for sc in t.scenarios + tuple(s for g in t.groups for s in g.scenarios):
            for step in _flat_steps(sc.steps):
                for beat in step.alts:
                    if beat not in world.beats:
                        _fail(path / f"{tier}.yaml", f"scenario {sc.id}", f"step '{beat}' is not a beat",
                              "define it under beats: in beats.yaml or correct the spelling")
        for lang in t.langs:
            if not any(p.lang == lang for p in world.projects):
                _fail(path / f"{tier}.yaml", "langs", f"no project is written in '{lang}'", "add a project or remove the language")
    for p in world.projects:
        if p.lang not in world.languages:
            _fail(path / "world.yaml", f"project {p.fixed['project']}", f"language '{p.lang}' is not defined",
                  "add it under languages: in languages.yaml")
    known = set(COMPUTED) | set(BUILTIN_SLOTS) | {"project", "pkg", "about", "lang", "dnoun", "pident", "pword", "pphrase", "pline"}
    scopes = [world.scope, *world.languages.values()]
    for t in world.tiers.values():
        scopes.append(t.scope)
        for g in t.groups:
            scopes += [g.scope, *(s.scope for s in g.scenarios)]
        scopes += [s.scope for s in t.scenarios]
    for s in scopes:
        known.update(k for k, _ in s.let)
        known.update(s.pools)
    for source, data in sources:
        for text in _strings(data):
            if "{{" not in text:
                continue
            for part in _parts(text):
                if not isinstance(part, _Slot):
                    continue
                if part.name not in known:
                    _fail(source, f"{{{{{part.name}}}}}", f"is used in {text[:50]!r} but no pool or let has that name",
                          "define it or correct the spelling")
                bad = [f for f in part.filters if f not in FILTERS]
                if bad:
                    _fail(source, f"{{{{{part.name}|{bad[0]}}}}}", f"'{bad[0]}' is not a filter", f"use one of {', '.join(FILTERS)}")


_WORLDS: dict[tuple, "_World"] = {}  # (data digest, reserved terms) -> world; a few entries at most


def _world(terms: tuple[tuple[str, str], ...]) -> "_World":
    """The data files, parsed and pruned of reserved terms; re-read whenever a file's bytes change."""
    files = tuple((p.name, p.read_bytes()) for p in generator_files()[1:])
    if not files:
        raise HaystackError(f"{DATA_DIR}: no haystack data files — fix: restore corpus/haystack/*.yaml")
    digest = hashlib.sha256(b"".join(n.encode() + b"\0" + d + b"\0" for n, d in files)).hexdigest()
    world = _WORLDS.get((digest, ()))
    if world is None:
        _WORLDS.clear()
        world = _WORLDS[(digest, ())] = _load_world(files)
    pruned = _WORLDS.get((digest, terms))
    if pruned is None:
        if len(_WORLDS) > 4:
            _WORLDS.clear()
            _WORLDS[(digest, ())] = world
        pruned = _WORLDS[(digest, terms)] = _pruned(world, terms)
    return pruned


# --- pruning: keep reserved terms out of the vocabulary in the first place -----------------------------

def _clean(texts: tuple[str, ...], terms, where: str) -> tuple[str, ...]:
    if not terms:
        return texts
    kept = tuple(t for t in texts if _first_hit(t.lower(), terms) is None)
    if not kept:
        raise HaystackError(f"{DATA_DIR}: every entry of {where} contains a reserved term "
                            f"('{_first_hit(texts[0].lower(), terms)}') — fix: add entries without it")
    return kept


def _clean_scope(scope: _Scope, terms, where: str) -> _Scope:
    return _Scope(tuple((k, _clean(v, terms, f"let '{k}' of {where}")) for k, v in scope.let),
                  {k: _clean(v, terms, f"pool '{k}' of {where}") for k, v in scope.pools.items()})


def _clean_scenarios(scs, terms, where: str):
    return tuple(_Scenario(s.id, s.weight, s.steps, _clean_scope(s.scope, terms, f"{where} scenario {s.id}")) for s in scs)


def _pruned(world: _World, terms: tuple[tuple[str, str], ...]) -> _World:
    """The world without any pool entry, binding, project or beat variant that contains a reserved term."""
    if not terms:
        return world
    beats = {}
    for name, variants in world.beats.items():
        kept = tuple(v for v in variants if _first_hit("\n".join(_strings(list(v))).lower(), terms) is None)
        if not kept:
            raise HaystackError(f"{DATA_DIR}/beats.yaml: every variant of beat '{name}' contains a reserved term — "
                                "fix: add a variant without it")
        beats[name] = kept
    projects = []
    for p in world.projects:
        if _first_hit("\n".join(p.fixed.values()).lower(), terms) is None:
            domain = tuple(d for d in p.domain if _first_hit(d.lower(), terms) is None)
            if domain:
                projects.append(_Project(p.lang, p.fixed, domain))
    tiers = {}
    for name, t in world.tiers.items():
        groups = tuple(_Group(g.id, g.weight, _clean_scope(g.scope, terms, f"{name} group {g.id}"),
                              _clean_scenarios(g.scenarios, terms, f"{name} group {g.id}")) for g in t.groups)
        tiers[name] = _Tier(name, t.langs, _clean_scope(t.scope, terms, name), groups,
                            _clean_scenarios(t.scenarios, terms, name))
    return _World(_clean_scope(world.scope, terms, "the data files"),
                  {k: _clean_scope(v, terms, f"language {k}") for k, v in world.languages.items()},
                  tuple(projects), beats, tiers, world.stopwords, world.fallback_prompt)


# --- the task prompts, for near misses ------------------------------------------------------------------

_BACKTICK = re.compile(r"`([^`\n]+)`")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[./][A-Za-z0-9_]+)*(?:\([^()\s]*\))?/?")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*[A-Za-z]")


def _looks_like_code(tok: str) -> bool:
    return any(c in tok for c in "_./()") or (tok[:1].isupper() and any(c.isupper() for c in tok[1:]))


def prompt_vocabulary(prompt: str, stopwords: frozenset[str]) -> dict[str, tuple[str, ...]]:
    """A prompt's identifiers, content words, two-word phrases and lines, in order of first appearance.

    `stopwords` (lower case) are neither words nor identifiers: NotImplementedError or pytest are in
    every prompt and tie a near miss to none of them."""
    idents: dict[str, None] = {}
    for span in _BACKTICK.findall(prompt):
        for tok in _IDENT.findall(span):
            if (_looks_like_code(tok) or len(tok) > 3) and tok.lower() not in stopwords:
                idents.setdefault(tok, None)
    words: dict[str, None] = {}
    phrases: dict[str, None] = {}
    for line in re.split(r"[.;:!?\n]+", _BACKTICK.sub(" , ", prompt)):
        prev = None
        for w in _WORD.findall(line):
            if any(c.isupper() for c in w[1:]):  # CamelCase outside backticks: code, not a word
                if w.lower() not in stopwords:
                    idents.setdefault(w, None)
                prev = None
                continue
            low = w.lower().removesuffix("'s")
            content = len(low) >= 4 and low not in stopwords
            if content:
                words.setdefault(low, None)
                if prev:
                    phrases.setdefault(f"{prev} {low}", None)
            prev = low if content else None
    sentences = (" ".join(s.split()) for s in re.split(r"(?<=[.!?])\s+|\n\s*\n", prompt))
    lines = {s: None for s in sentences if 25 <= len(s) <= 160}
    return {"pident": tuple(idents), "pword": tuple(words), "pphrase": tuple(phrases), "pline": tuple(lines)}


def _component_names(prompts: list[str]) -> re.Pattern | None:
    """The prompts' distinctive identifiers (snake_case, CamelCase, paths: make_id, RecordStore,
    eventlog/__init__.py), as whole words. Only near misses may name the tasks' own components;
    a background, topical or neighbour session that happens to (a generated `render_listing`) is
    drawn again, so no neighbour ever states a rule for a task's component."""
    names: dict[str, None] = {}
    for prompt in prompts:
        for ident in prompt_vocabulary(prompt, frozenset())["pident"]:
            base = re.sub(r"\(.*\)$", "", ident).rstrip("/")
            if len(base) >= 5 and ("_" in base or "/" in base or re.search(r"[a-z][A-Z]", base)):
                names.setdefault(base, None)
    if not names:
        return None
    alternation = "|".join(re.escape(n) for n in sorted(names, key=lambda n: (-len(n), n)))
    return re.compile(rf"(?<![A-Za-z0-9_])(?:{alternation})(?![A-Za-z0-9_])")


def _prompt_groups(world: _World, prompts: list[str], terms) -> tuple[_Group, ...]:
    groups = []
    for i, prompt in enumerate(prompts or [world.fallback_prompt]):
        vocab = prompt_vocabulary(prompt, world.stopwords)
        vocab = {k: tuple(v for v in vs if _first_hit(v.lower(), terms) is None) for k, vs in vocab.items()}
        # Backstops so a terse prompt still yields usable pools.
        vocab["pword"] = vocab["pword"] or ("change",)
        vocab["pident"] = vocab["pident"] or vocab["pword"]
        vocab["pphrase"] = vocab["pphrase"] or vocab["pword"]
        vocab["pline"] = vocab["pline"] or vocab["pphrase"]
        groups.append(_Group(f"prompt[{i}]", 1, _Scope((), vocab), ()))
    return tuple(groups)


# --- drawing documents -----------------------------------------------------------------------------------

def _weighted(rng: random.Random, items):
    total = sum(i.weight for i in items)
    x = rng.randrange(total)
    for item in items:
        x -= item.weight
        if x < 0:
            return item
    return items[-1]


def _tier_plan(count: int, seed: int) -> list[str]:
    """Exactly `count` tiers in the asked proportions (largest remainder), in a seeded order."""
    total = sum(TIER_SHARES.values())
    exact = {t: count * TIER_SHARES[t] / total for t in TIERS}
    counts = {t: int(exact[t]) for t in TIERS}
    for t in sorted(TIERS, key=lambda t: (counts[t] - exact[t], TIERS.index(t)))[:count - sum(counts.values())]:
        counts[t] += 1
    plan = [t for t in TIERS for _ in range(counts[t])]
    random.Random(f"memgrid-haystack|{seed}|tiers").shuffle(plan)
    return plan


def _play(world: _World, steps: tuple[_Step, ...], doc: _Doc, events: list[dict]) -> None:
    """Expand steps into events: skip by chance, repeat, pick a beat, pick its variant, fill it."""
    rng = doc.rng
    for step in steps:
        if step.percent < 100 and rng.randrange(100) >= step.percent:
            continue
        for _ in range(rng.randint(*step.times)):
            if step.block:
                _play(world, step.block, doc, events)
                continue
            variants = world.beats[step.alts[rng.randrange(len(step.alts))]]
            doc.local.clear()
            for ev in variants[rng.randrange(len(variants))]:
                events.append(doc.value(ev))


def _draw(world: _World, tier: _Tier, groups: tuple[_Group, ...], rng: random.Random) -> tuple[dict, ...]:
    projects = [p for p in world.projects if p.lang in tier.langs]
    if not projects:
        raise HaystackError(f"{DATA_DIR}/world.yaml: no project left for the {tier.name} tier "
                            "(reserved terms removed them all?) — fix: add projects")
    project = projects[rng.randrange(len(projects))]
    group = _weighted(rng, groups) if groups else None
    candidates = (group.scenarios if group and group.scenarios else ()) + tier.scenarios
    scenario = _weighted(rng, candidates)
    lang = world.languages[project.lang]
    layers = [world.scope, lang, tier.scope, *([group.scope] if group else []), scenario.scope]
    pools = ChainMap(*(layer.pools for layer in reversed(layers)), {"dnoun": project.domain})
    where = f"tier {tier.name}, {'group ' + group.id + ', ' if group else ''}scenario {scenario.id}"
    doc = _Doc(rng, pools, dict(project.fixed), where)
    for layer in layers:
        for name, options in layer.let:
            doc.fixed[name] = doc.fill(options[rng.randrange(len(options))])
    events: list[dict] = []
    _play(world, scenario.steps, doc, events)
    # Drop events a template left empty (an optional remark that drew nothing).
    return tuple(e for e in events if e.get("content") or e.get("tool_input"))


def generate(count: int, seed: int, prompts: list[str], reserved_terms: list[str]) -> list[HaystackDoc]:
    """`count` distractor sessions for one seed; the same arguments and data files give the same output.

    A document that contains a reserved term, or falls outside the length bounds, is drawn again
    from the next random stream of the same document index, so each index is reproducible alone.
    """
    terms = tuple(_lowered(reserved_terms))
    world = _world(terms)
    near = _prompt_groups(world, list(prompts), terms)
    components = _component_names(list(prompts))
    docs = []
    for index, tier_name in enumerate(_tier_plan(count, seed)):
        tier = world.tiers[tier_name]
        groups = near if tier_name == "near_miss" else tier.groups
        last = None
        for attempt in range(MAX_ATTEMPTS):
            rng = random.Random(f"memgrid-haystack|{seed}|{index}|{attempt}")
            doc = HaystackDoc(tier_name, _draw(world, tier, groups, rng))
            text = doc_text(doc)
            if not (MIN_EVENTS <= len(doc.events) <= MAX_EVENTS and MIN_CHARS <= len(text) <= MAX_CHARS):
                last = f"length ({len(doc.events)} events, {len(text)} characters)"
                continue
            hit = _first_hit(text.lower(), list(terms))
            if hit is not None:
                last = f"reserved term '{hit}'"
                continue
            named = components.search(text) if components and tier_name != "near_miss" else None
            if named is not None:
                last = f"a task component's name '{named.group()}'"
                continue
            docs.append(doc)
            break
        else:
            raise HaystackError(f"{DATA_DIR}: document {index} ({tier_name}, seed {seed}) failed {MAX_ATTEMPTS} draws, "
                                f"last on {last} — fix: take that wording out of corpus/haystack/*.yaml, "
                                "or loosen the scenario's steps")
    return docs
