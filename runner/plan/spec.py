"""Load and validate the YAML specs (task.yaml, arm.yaml, grid spec) into typed records.

Every failure is a SpecError naming the file, the field and the fix, so a researcher who does
not read Python can mend the YAML from one line.
"""

import ast
import json
import os
import re
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from pathlib import Path

import jsonschema
import yaml
from yaml.reader import ReaderError

from runner.errors import SpecError

CONDITIONS = ("absent", "superseded", "contradictory", "adjacent", "present")
DEFAULT_SUITE = "memgrid"  # the tasks directly under tasks/, with their corpus under corpus/
DEFAULT_DISK_MIB = 2048  # a sandbox's disk budget unless the grid or its task sets one
DEFAULT_ARTIFACT_MIB = 64  # the largest workspace the checker grades unless the task sets one


@dataclass(frozen=True)
class CheckerSpec:
    command: tuple[str, ...]
    timeout_seconds: int = 60
    unisolated: str | None = None  # why it can run artifact code as the judge (task.yaml checker.unisolated); None: isolated


@dataclass(frozen=True)
class PlantsSpec:
    """Which of the task's transcripts each condition plants (tasks/<id>/plants.yaml)."""
    roles: dict[str, tuple[str, ...]]  # role -> transcript paths relative to the task folder
    conditions: dict[str, tuple[str, ...]]  # condition -> roles, oldest first


@dataclass(frozen=True)
class SessionLimits:
    """Caps on one model session; None: no cap. A session that reaches one is recorded budget_exhausted."""
    max_turns: int | None = None
    max_output_tokens: int | None = None

    def over(self, grid: "SessionLimits") -> "SessionLimits":
        """These limits, each unset one taken from `grid` (a task's limits win over its grid's)."""
        return SessionLimits(self.max_turns if self.max_turns is not None else grid.max_turns,
                             self.max_output_tokens if self.max_output_tokens is not None else grid.max_output_tokens)

    def as_dict(self) -> dict:
        return {k: v for k, v in vars(self).items() if v is not None}


@dataclass(frozen=True)
class EntrySpec:
    """The artifact function a task's checker calls (task.yaml `entry`): where the task-aware hack canaries
    (runner/grading/canaries.py) put a function that looks for the expected value instead of computing it."""
    file: str  # relative to the workspace, e.g. records/__init__.py
    function: str  # defined at the top level of that file


@dataclass(frozen=True)
class TaskSpec:
    id: str
    title: str
    prompt: str
    fact_summary: str
    fact_terms: tuple[str, ...]
    conditions: tuple[str, ...]
    checker: CheckerSpec
    detector: CheckerSpec
    agent_seconds: int
    wrong_rules: dict[str, tuple[str, ...]]  # condition -> markers of its wrong rule (the reader agent's options)
    plants: PlantsSpec | None = field(compare=False)
    root: Path = field(compare=False)
    disk_mib: int | None = None  # the sandbox's disk budget; None: the grid's
    artifact_mib: int = DEFAULT_ARTIFACT_MIB  # the largest workspace the checker grades
    session_limits: SessionLimits = field(default_factory=SessionLimits)  # None fields: the grid's
    entry: EntrySpec | None = None  # None: a checker that calls no artifact function (a CLI's)

    @property
    def fixture(self) -> Path:
        return self.root / "fixture"

    @property
    def oracle(self) -> Path:
        return self.root / "oracle"

    def reference(self, name: str) -> Path:
        return self.root / "references" / name


@dataclass(frozen=True)
class ArmFile:
    source: str
    dest: str


@dataclass(frozen=True)
class SearchSpec:
    """How an agent calls a server's search tool and reads its answer (arm.yaml `mcp.search`): a third-party
    product has its own argument names and result shape, and a substring search finds nothing for a whole
    prompt, so an agent that knows the product asks it one keyword at a time. The defaults are recall's shape."""
    arguments: dict = field(default_factory=lambda: {"query": "{query}", "k": "{k}"})  # "{query}", "{k}" filled in
    query: str = "prompt"  # "prompt": one call with the task prompt; "keywords": one call per keyword of it
    query_chars: int | None = None  # the product reads at most this many characters of a query (it keeps its
    # own pick of them, e.g. the tail, where every task prompt ends alike): "prompt" sends the prompt's first N
    hits: str = "hits"  # the list of hits, under this key of the structured result (or of the text parsed as JSON)
    hit_id: str = "id"
    hit_text: tuple[str, ...] = ("snippet",)  # fields joined into a hit's text (a list field: its items)
    hit_pattern: str | None = None  # a text result: a regex with named groups id and text, one match per hit

    def as_config(self) -> dict:
        """What an agent is handed; query_chars only when set, so an arm without it hands what it handed before
        (the same config, the same cell digests)."""
        return {"arguments": self.arguments, "query": self.query, "hits": self.hits, "hit_id": self.hit_id,
                "hit_text": list(self.hit_text), "hit_pattern": self.hit_pattern,
                **({"query_chars": self.query_chars} if self.query_chars is not None else {})}


TEXT = "{text}"  # what mcp.write's arguments put the remembered text in place of


def fill_text(value, text: str):
    """An arguments template with every "{text}" in its strings replaced by `text`, at any depth (a product's
    write tool may take the text inside a list of entities or beside a wing and a room)."""
    if isinstance(value, str):
        return value.replace(TEXT, text)
    if isinstance(value, list):
        return [fill_text(v, text) for v in value]
    if isinstance(value, dict):
        return {k: fill_text(v, text) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class WriteSpec:
    """How an agent remembers a text through a server's write tool (arm.yaml `mcp.write`): a third-party
    product takes its own shape (an entity with a name and a type, a drawer in a wing and a room, a memory
    with tags), not recall's {"text": ...}, and some answer a refusal as an ordinary result, so what the
    answer names the stored item by is read back, and an answer that names nothing counts as refused."""
    tool: str
    arguments: dict  # the tool's arguments; "{text}" in any string is replaced by the text (see fill_text)
    id: str | None = None  # a dotted path into the structured result (or the text parsed as JSON): "entities.0.name"
    id_pattern: str | None = None  # a text result: a regex whose named group id is the stored item's id

    def call(self, text: str) -> dict:
        return fill_text(self.arguments, text)

    def as_config(self) -> dict:
        return {"tool": self.tool, "arguments": self.arguments, "id": self.id, "id_pattern": self.id_pattern}


@dataclass(frozen=True)
class McpSpec:
    server: str
    command: tuple[str, ...]
    search_tool: str
    required_tools: tuple[str, ...]
    write_tools: tuple[str, ...] = ()  # the write tools a writing session must be offered (write.tool among them)
    write_command: tuple[str, ...] = ()  # the server as sessions that may write start it (default: command)
    search: SearchSpec = SearchSpec()
    write: WriteSpec | None = None  # how an agent remembers through it; None: read-only

    @property
    def prefix(self) -> str:
        """The tool-name prefix this server owns in an agent's session."""
        return f"mcp__{self.server}__"


@dataclass(frozen=True)
class PlantApi:
    """How the planted protocol drives an arm (arm.yaml `planted:`): commands run in the arm's image with
    {store} (the cell's store folder) and {namespace} (unique to the cell) filled in, and the environment
    its server gets in a planted session ({namespace}, {log}: where it logs what it served)."""
    plant: tuple[str, ...]  # memories as JSON on stdin -> {"ids": [...]} on stdout
    forget: tuple[str, ...]  # {"ids": [...]} on stdin -> forgets each by exact id
    count: tuple[str, ...]  # -> {"ids": [...]}: what the namespace still holds
    env: dict  # the server's environment in every planted session
    kill_switch: dict  # added to env: the arm's own off switch (an empty namespace is not off)
    lanes: tuple[str, ...]  # named retrieval lanes the arm can disable one at a time
    lane_env: str | None  # the variable naming the disabled lanes, comma-separated


@dataclass(frozen=True)
class HookSpec:
    event: str
    command: tuple[str, ...]


@dataclass(frozen=True)
class ArmSpec:
    name: str
    kind: str
    description: str
    instructions: str
    files: tuple[ArmFile, ...]
    search_tool: str | None
    mcp: McpSpec | None
    ingest: tuple[str, ...] | None
    ingest_seconds: int
    hooks: tuple[HookSpec, ...]
    uses: str | None  # prefetch arms: the mcp arm whose image, store and server they use
    required_paths: tuple[str, ...]  # must exist in the sandbox when the session starts
    root: Path = field(compare=False)
    memory_file: str | None = None  # files arms: a writable file in the store that later sessions receive
    planted: PlantApi | None = None  # the write API and switches the planted protocol drives
    embedder: str | None = None  # "shared": memgrid's embedder sidecar at {embedder_url}; None: the product's own
    image_of: str | None = None  # the arm whose folder builds this arm's image; None: its own folder


@dataclass(frozen=True)
class GridSpec:
    name: str
    tasks: tuple[str, ...] | str  # "all" (every task of the suite) or task ids
    arms: tuple[str, ...]
    agents: tuple[str, ...]
    seeds: int
    conditions: tuple[str, ...]
    network: str = "none"
    allow_hosts: tuple[str, ...] = ()
    # What model agents' cells (claude-code, codex, answerer) run on, each model a coordinate of the grid's cells;
    # () when the grid names none. A grid of several runs each such agent once per model (runner.plan.players).
    models: tuple[str, ...] = ()
    prices: dict = field(default_factory=dict)  # model -> USD per million tokens by class, with as_of and source
    disk_mib: int = DEFAULT_DISK_MIB  # each sandbox's disk budget, unless its task sets its own
    protocol: str = "coding"  # what a cell is (memgrid protocol list)
    suite: str = DEFAULT_SUITE  # the coding suite its tasks and corpus come from
    cases: int | None = None  # protocols whose units are generated: how many
    command_agents: dict = field(default_factory=dict)  # name -> {command, files}: any command line as an agent
    budget_usd: float | None = None  # the run's spend cap at its prices; not an input: a resume may raise it
    budgets_usd: dict = field(default_factory=dict)  # a grid of several models: model -> its cells' cap (as budget_usd)
    limits: SessionLimits = field(default_factory=SessionLimits)
    judges: tuple[str, ...] = ()  # personal: the model judge panel, one model id per judge; () : deterministic judges only
    judge_panel: str | None = None  # the published panel `judges:` named (openai_judges.PRESETS), if it named one
    judge_endpoint: str = "messages"  # where the model judges are asked: the model gateway, or an OpenAI-compatible API
    unisolated_checkers: tuple[str, ...] = ()  # tasks whose unisolated checkers the researcher accepts, each by name
    # Where the cells run: not an input (never in the lock), so a resume may move to other machines.
    executor: str = "local"
    scheduler: str | None = None  # the dask scheduler's address

    @property
    def model(self) -> str | None:
        """The grid's one model (None when it names none). A grid of several models is asked this per model, of
        `for_model(m)`; asking it of the whole grid is a bug, never a silent first pick."""
        if len(self.models) > 1:
            raise ValueError(f"grid {self.name} names {len(self.models)} models: ask each of for_model(model)")
        return self.models[0] if self.models else None

    def for_model(self, model: str) -> "GridSpec":
        """The grid as one of its models' agents see it: that model alone."""
        return replace(self, models=(model,))

    def as_dict(self) -> dict:
        data = {
            "name": self.name,
            "tasks": self.tasks if isinstance(self.tasks, str) else list(self.tasks),
            "arms": list(self.arms),
            "agents": list(self.agents),
            "seeds": self.seeds,
            "conditions": list(self.conditions),
            "network": self.network,
        }
        if self.allow_hosts:
            data["allow_hosts"] = list(self.allow_hosts)
        if len(self.models) == 1:  # a one-model grid's lock stays as it was before a grid could name several
            data["model"] = self.models[0]
        elif self.models:
            data["models"] = list(self.models)
        if self.prices:
            data["prices"] = self.prices
        if self.disk_mib != DEFAULT_DISK_MIB:
            data["disk_mib"] = self.disk_mib
        if self.protocol != "coding":  # a coding grid's lock stays as it was before protocols had names
            data["protocol"] = self.protocol
        if self.suite != DEFAULT_SUITE:  # and memgrid's own suite's as it was before there were suites
            data["suite"] = self.suite
        if self.cases is not None:
            data["cases"] = self.cases
        if self.command_agents:
            data["command_agents"] = self.command_agents
        if self.budget_usd is not None:
            data["budget_usd"] = self.budget_usd
        if self.budgets_usd:
            data["budgets_usd"] = self.budgets_usd
        if self.limits.as_dict():
            data["limits"] = self.limits.as_dict()
        if self.judges:
            data["judges"] = self.judge_panel or list(self.judges)
        if self.judge_endpoint != "messages" and self.judge_panel is None:
            data["judge_endpoint"] = self.judge_endpoint
        if self.unisolated_checkers:
            data["unisolated_checkers"] = list(self.unisolated_checkers)
        return data


@cache
def _schema(name: str) -> dict:
    return json.loads(resources.files("runner").joinpath(f"schemas/{name}.schema.json").read_text())


MAX_SPEC_BYTES = 4 << 20  # far above any spec file; bounds what a wrong path (a device, a dump) costs
MAX_DEPTH = 32  # specs nest a few levels; deeper is a nesting bomb that would exhaust the recursive constructor
_PLAIN = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present, for speed; both read specs alike
# Implicit types a spec never means: a date stays the text it was written as (as_of: 2026-11-01), '<<' and '='
# stay plain text instead of a merge key or a value marker.
_NOT_IMPLICIT = {"tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:merge", "tag:yaml.org,2002:value"}


class _SpecLoader(_PLAIN):
    """Plain data: text keys, each key once (a repeated key would silently replace the first)."""

    yaml_implicit_resolvers = {first: [(tag, regexp) for tag, regexp in resolvers if tag not in _NOT_IMPLICIT]
                               for first, resolvers in _PLAIN.yaml_implicit_resolvers.items()}

    def __init__(self, text: str, path, first_line: int):
        super().__init__(text)
        self.path, self.first_line = path, first_line

    def construct_mapping(self, node, deep=False):
        seen: dict[str, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + self.first_line
            if not isinstance(key, str):
                raise SpecError(self.path, f"line {line}", f"has the key {key!r}, which is not text",
                                "write a field name (quote it if it reads as a number, boolean or null)")
            if key in seen:
                raise SpecError(self.path, f"line {line}", f"repeats the key '{key}' (first on line {seen[key]})",
                                "keep one of them")
            seen[key] = line
        return super().construct_mapping(node, deep)


def read_spec_bytes(path: Path, missing_fix: str = "create it or check the path") -> bytes:
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_SPEC_BYTES + 1)
    except FileNotFoundError:
        raise SpecError(path, "(file)", "does not exist", missing_fix) from None
    except IsADirectoryError:
        raise SpecError(path, "(file)", "is a folder, not a file", "give the path of the YAML file") from None
    except OSError as e:
        raise SpecError(path, "(file)", f"cannot be read ({e.strerror})", "check the path and its permissions") from None
    if len(raw) > MAX_SPEC_BYTES:
        raise SpecError(path, "(file)", f"is larger than {MAX_SPEC_BYTES >> 20} MiB, far more than a spec",
                        "give the path of the YAML spec")
    return raw


def read_yaml(path: Path) -> dict:
    """The one reader of spec YAML files (task, plants, arm, grid, corpus settings; preregistrations use parse_yaml)."""
    return parse_yaml(path, read_spec_bytes(path))


def spec_text(path, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SpecError(path, "(file)", f"is not UTF-8 text (byte {e.start} is 0x{e.object[e.start]:02x})",
                        "save it as UTF-8 text; a binary file is not a spec") from None


def parse_yaml(path, raw: bytes | str, *, first_line: int = 1, top: str = "(top level)") -> dict:
    """A spec's YAML as plain data (text keys; text, numbers, booleans, null, lists, mappings), or one SpecError.
    `first_line`: the file line `raw` starts on (a preregistration's front matter starts on line 2);
    `top`: how errors name the whole document."""
    text = spec_text(path, raw) if isinstance(raw, bytes) else raw
    try:
        _refuse_non_data(path, text, first_line)
        loader = _SpecLoader(text, path, first_line)
        try:
            data = loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.YAMLError as e:
        raise _yaml_error(path, e, first_line) from None
    if data is None:
        raise SpecError(path, top, "is empty", "write the spec's fields as 'field: value' lines")
    if not isinstance(data, dict):
        raise SpecError(path, top, f"is a {_yaml_kind(data)}, not a mapping of fields", "write 'field: value' lines")
    return data


def _refuse_non_data(path, text: str, first_line: int) -> None:
    """Refuse, from the event stream and before anything is built, what plain data never needs: anchors and
    aliases (an alias bomb expands exponentially when validated or dumped), tags (they name constructors)
    and nesting deeper than MAX_DEPTH."""
    depth = 0
    for event in yaml.parse(text, Loader=_PLAIN):
        where = f"line {event.start_mark.line + first_line}"
        if isinstance(event, yaml.AliasEvent):
            raise SpecError(path, where, f"uses the YAML alias *{event.anchor}", "write the value out in full; "
                            "specs allow no anchors (&) or aliases (*)")
        if getattr(event, "anchor", None) is not None:
            raise SpecError(path, where, f"defines the YAML anchor &{event.anchor}", "remove it and write values out "
                            "in full; specs allow no anchors (&) or aliases (*)")
        if getattr(event, "tag", None) is not None:
            raise SpecError(path, where, f"has the YAML tag {event.tag}", "remove the tag; a spec holds plain text, "
                            "numbers, lists and mappings (quote a value that starts with '!')")
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise SpecError(path, where, f"nests lists or mappings deeper than {MAX_DEPTH} levels",
                                "flatten it; a spec is a few levels deep")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _yaml_error(path, e: yaml.YAMLError, first_line: int) -> SpecError:
    if isinstance(e, ReaderError):
        return SpecError(path, "(file)", f"holds a character YAML does not allow ({e.reason})",
                         "remove it; a binary file is not a spec")
    mark = getattr(e, "problem_mark", None)
    where = f"line {mark.line + first_line}" if mark else "(syntax)"
    problem = getattr(e, "problem", None) or "is not valid YAML"
    if getattr(e, "context", None) == "expected a single document in the stream":
        return SpecError(path, where, "holds a second YAML document ('---')", "keep one document: remove the '---' line")
    return SpecError(path, where, f"YAML syntax error: {problem}", "fix the YAML syntax at that line")


def _yaml_kind(data) -> str:
    return {list: "list", str: "text", bool: "boolean", int: "number", float: "number"}.get(type(data), type(data).__name__)


def _field_path(error: jsonschema.ValidationError) -> str:
    parts = [str(p) if not isinstance(p, int) else f"[{p}]" for p in error.absolute_path]
    return ".".join(parts).replace(".[", "[") or "(top level)"


def _nearest_hint(error: jsonschema.ValidationError, schema: dict) -> str | None:
    """The x-fix of the deepest schema node on the failing path (an item's hint sits on its array), through
    local $refs as the validator followed them."""
    node, hint = schema, schema.get("x-fix")
    for key in list(error.absolute_schema_path)[:-1]:
        if isinstance(node, dict) and key not in node and "$ref" in node:
            node = _local_ref(schema, node["$ref"])
            hint = node.get("x-fix", hint)
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            break  # a path this walk does not model: the deepest hint found so far
        if isinstance(node, dict) and "x-fix" in node:
            hint = node["x-fix"]
    return hint


def _local_ref(schema: dict, ref: str) -> dict:
    """The node a local reference (#/$defs/name) names; {} for any other reference."""
    node = schema if ref.startswith("#/") else {}
    for part in ref.removeprefix("#/").split("/"):
        node = node.get(part, {}) if isinstance(node, dict) else {}
    return node if isinstance(node, dict) else {}


def _fix_for(error: jsonschema.ValidationError, schema: dict) -> str:
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else "the field"
        sub = error.schema.get("properties", {}).get(missing, {})
        extra = f" ({sub['x-fix']})" if "x-fix" in sub else ""
        return f"add the field '{missing}'{extra}"
    if error.validator == "additionalProperties":
        allowed = ", ".join(sorted(error.schema.get("properties", {})))
        return f"remove it or correct its spelling; allowed fields: {allowed}"
    hint = _nearest_hint(error, schema)
    if hint:
        return hint
    if error.validator == "enum":
        return f"use one of: {', '.join(map(str, error.validator_value))}"
    return "see the schema in runner/schemas/"


def validate(data: dict, schema_name: str, path: Path) -> None:
    schema = _schema(schema_name)
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is None:
        return
    field_path = _field_path(error)
    if error.validator == "additionalProperties":
        extra = [k for k in error.instance if k not in error.schema.get("properties", {})]
        prefix = f"{field_path}." if field_path != "(top level)" else ""
        field_path = prefix + (extra[0] if extra else "?")
        problem = "is not a known field"
    elif error.validator == "required":
        problem = "is missing a required field"
    elif error.validator == "type" and isinstance(error.instance, bool) and error.validator_value == "string":
        # YAML 1.1 reads on, off, yes and no unquoted as booleans: [off, on] is [false, true]
        raise SpecError(path, field_path, f"is read as {str(error.instance).lower()}, not text: YAML takes on, off, yes "
                        "and no unquoted as booleans", "quote it, e.g. conditions: [\"off\", \"on\"]")
    elif error.validator == "not" and isinstance(error.instance, dict):  # a field another protocol or kind uses
        forbidden = error.schema["not"].get("anyOf", [error.schema["not"]])
        used = [f for branch in forbidden for f in branch.get("required", []) if f in error.instance]
        field = used[0] if used else "?"
        if "kind" in error.instance:  # an arm: the rule says what its kind takes
            raise SpecError(path, field, f"is not used by an arm of kind {error.instance['kind']}",
                            error.schema.get("x-fix", "remove it"))
        protocol = error.instance.get("protocol", "coding")
        fix = schema.get("properties", {}).get(field, {}).get("x-fix", "remove it")
        raise SpecError(path, field, f"is not used by the {protocol} protocol", f"remove it; {fix}")
    else:
        problem = error.message if len(error.message) < 160 else error.message[:157] + "..."
    raise SpecError(path, field_path, problem, _fix_for(error, schema))


def inside_project(path: Path, project: Path, spec, field: str, named: str, fix: str) -> Path:
    """`path`, once it is known to stay inside `project` with every link followed; else one SpecError naming the
    spec file, the field and what it names. A spec may come from someone else (a preregistration to reproduce, an
    imported task): were an absolute path, a '..' or a link out let through, the controller would copy any host
    file it can read (/etc/shadow, ~/.ssh) into a sandbox, and from there into transcripts and artifacts."""
    try:
        real, top = path.resolve(), project.resolve()
    except (OSError, RuntimeError) as e:  # RuntimeError: a link loop
        raise SpecError(spec, field, f"names {named!r}, which cannot be resolved ({e})", fix) from None
    if not real.is_relative_to(top):
        raise SpecError(spec, field, f"names {named!r}, which leads to {real}, outside the project {top}", fix)
    return path


FOLDER_FIX = "make it a folder of the project: copy the files in instead of linking to them"


def _inside_task_folder(task_dir: Path, project: Path, spec: Path, subs: tuple[str, ...]) -> None:
    """A task's own folders are named by convention, not by a field, and read whole (fixture into the sandbox,
    oracle into the checker): each, and each reference under references/, must not lead out of the project."""
    for sub in subs:
        inside_project(task_dir / sub, project, spec, "(task folder)", f"{sub}/", FOLDER_FIX)
    for refs in (task_dir / "references", task_dir / "references" / "damaged"):
        for child in (sorted(refs.iterdir()) if refs.is_dir() else ()):
            inside_project(child, project, spec, "(task folder)", f"{child.relative_to(task_dir).as_posix()}/", FOLDER_FIX)


def _require_folder_name(path: Path, field: str, value: str) -> None:
    if value != path.parent.name:
        raise SpecError(path, field, f"is '{value}' but the folder is '{path.parent.name}'",
                        f"make the {field} equal the folder name")


def load_task(task_dir: Path, project: Path | None = None) -> TaskSpec:
    """`project`: the checkout; by default the task is tasks/<id>/ of memgrid's own suite."""
    path = task_dir / "task.yaml"
    project = project or task_dir.parent.parent
    inside_project(task_dir, project, path, "(task folder)", task_dir.name, FOLDER_FIX)
    inside_project(path, project, path, "(file)", path.name, "make it a file of the task folder, not a link out of it")
    data = read_yaml(path)
    validate(data, "task", path)
    _require_folder_name(path, "id", data["id"])
    for sub in ("fixture", "oracle", "references/naive", "references/informed"):
        if not (task_dir / sub).is_dir():
            raise SpecError(path, "(task folder)", f"has no {sub}/ folder", f"create {task_dir / sub}")
    _inside_task_folder(task_dir, project, path, ("fixture", "oracle", "references"))
    checker, detector = data["checker"], data["detector"]
    return TaskSpec(
        id=data["id"],
        title=data["title"],
        prompt=data["prompt"],
        fact_summary=data["fact"]["summary"],
        fact_terms=tuple(data["fact"]["terms"]),
        conditions=tuple(data["conditions"]),
        checker=CheckerSpec(tuple(checker["command"]), checker.get("timeout_seconds", 60), checker.get("unisolated")),
        detector=CheckerSpec(tuple(detector["command"]), detector.get("timeout_seconds", 60)),
        agent_seconds=data.get("limits", {}).get("agent_seconds", 600),
        wrong_rules={c: tuple(m) for c, m in data.get("wrong_rules", {}).items()},
        plants=load_plants(task_dir, tuple(data["conditions"]), project) if (task_dir / "plants.yaml").exists() else None,
        root=task_dir,
        disk_mib=data.get("limits", {}).get("disk_mib"),
        artifact_mib=data.get("limits", {}).get("artifact_mib", DEFAULT_ARTIFACT_MIB),
        session_limits=SessionLimits(**{k: v for k, v in data.get("limits", {}).items()
                                        if k in ("max_turns", "max_output_tokens")}),
        entry=_entry(task_dir, project, path, data["entry"]) if "entry" in data else None,
    )


def _entry(task_dir: Path, project: Path, path: Path, data: dict) -> EntrySpec:
    """The entry must name a top-level function of a fixture file, and of the naive reference's copy if it has
    one (the canaries are laid over naive): a canary laid over anything else would replace nothing, and pass
    or fail without having attacked the checker."""
    fixture, naive = task_dir / "fixture", task_dir / "references" / "naive"
    source = inside_project(fixture / data["file"], project, path, "entry.file", data["file"],
                            "name a file inside fixture/, relative to it, e.g. records/__init__.py")
    if not source.resolve().is_relative_to(fixture.resolve()) or not source.is_file():
        raise SpecError(path, "entry.file", f"{data['file']} is not a file of fixture/",
                        f"name the Python file the checker imports, relative to {fixture}")
    for folder in (fixture, naive):
        if not (folder / data["file"]).is_file():
            continue
        shown = f"{folder.relative_to(task_dir).as_posix()}/{data['file']}"
        try:
            tree = ast.parse((folder / data["file"]).read_bytes(), shown)
        except (SyntaxError, ValueError) as e:
            raise SpecError(path, "entry.file", f"{shown} is not Python ({e})",
                            "name the Python file the checker imports") from None
        defined = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if data["function"] not in defined:
            raise SpecError(path, "entry.function", f"{data['function']!r} is not a top-level function of {shown}",
                            f"name the function the checker calls; {shown} defines: {', '.join(defined) or 'none'}")
    return EntrySpec(data["file"], data["function"])


def load_plants(task_dir: Path, conditions: tuple[str, ...], project: Path | None = None) -> PlantsSpec:
    path = task_dir / "plants.yaml"
    project = project or task_dir.parent.parent
    inside_project(path, project, path, "(file)", path.name, "make it a file of the task folder, not a link out of it")
    data = read_yaml(path)
    validate(data, "plants", path)
    roles = {role: tuple(files) for role, files in data["roles"].items()}
    for role, files in roles.items():
        for i, f in enumerate(files):
            inside_project(task_dir / f, project, path, f"roles.{role}[{i}]", f,
                           f"name a transcript inside the task folder, e.g. corpus/fact.jsonl (tasks/{task_dir.name}/corpus/)")
            if not (task_dir / f).is_file():
                raise SpecError(path, f"roles.{role}[{i}]", f"{f} does not exist", f"create {task_dir / f} or fix the path")
    planted = {c: tuple(r) for c, r in data["conditions"].items()}
    for c in conditions:
        if c not in planted:
            raise SpecError(path, "conditions", f"does not say what condition '{c}' plants",
                            f"add '{c}: [roles...]' (task.yaml lists '{c}' among its conditions)")
        for role in planted[c]:
            if role not in roles:
                raise SpecError(path, f"conditions.{c}", f"plants role '{role}' that roles does not define",
                                f"add roles.{role} or remove it from conditions.{c}")
    return PlantsSpec(roles, planted)


def _regex_groups(path: Path, field: str, pattern: str, needs: str) -> set[str]:
    """The named groups of an arm's regex; one line naming the field when it does not compile."""
    try:
        return set(re.compile(pattern).groupindex)
    except re.error as e:
        raise SpecError(path, field, f"is not a regular expression ({e})", f"give a Python regex with {needs}") from None


def _search_spec(path: Path, data: dict | None) -> SearchSpec:
    if data is None:
        return SearchSpec()
    spec = SearchSpec(**{k: tuple(v) if k == "hit_text" else v for k, v in data.items()})
    if spec.hit_pattern is not None:
        groups = _regex_groups(path, "mcp.search.hit_pattern", spec.hit_pattern, "the named groups id and text")
        if not {"id", "text"} <= groups:
            raise SpecError(path, "mcp.search.hit_pattern", "lacks the named group id or text",
                            "write (?P<id>...) and (?P<text>...) into the regex")
    if not any("{query}" in str(v) for v in spec.arguments.values()):
        raise SpecError(path, "mcp.search.arguments", "never passes {query}", 'map the tool\'s query argument to "{query}"')
    return spec


EMBEDDER_SLOT = "{embedder_url}"


def _check_embedder(path: Path, data: dict) -> None:
    """`embedder: shared` means the product is pointed at the sidecar: its server command (and its ingest, which
    embeds too) must pass {embedder_url}; without the field nothing may ask for it (no sidecar would answer)."""
    commands = {"mcp.command": data.get("mcp", {}).get("command", []), "ingest.command": data.get("ingest", {}).get("command", [])}
    for where, command in commands.items():
        named = any(EMBEDDER_SLOT in str(part) for part in command)
        if data.get("embedder") == "shared" and command and not named:
            raise SpecError(path, where, "never passes {embedder_url} although the arm says embedder: shared",
                            "pass \"{embedder_url}\" where the product takes its embeddings endpoint, or drop embedder")
        if data.get("embedder") != "shared" and named:
            raise SpecError(path, where, "passes {embedder_url} but no shared embedder runs for this arm",
                            "add 'embedder: shared' to arm.yaml, or drop {embedder_url}")
    if data.get("embedder") == "shared" and "mcp" not in data:
        raise SpecError(path, "embedder", "is shared but the arm has no mcp server to use it", "drop embedder")


def _mentions_text(value) -> bool:
    if isinstance(value, str):
        return TEXT in value
    if isinstance(value, list):
        return any(_mentions_text(v) for v in value)
    if isinstance(value, dict):
        return any(_mentions_text(v) for v in value.values())
    return False


def _write_spec(path: Path, data: dict | None) -> WriteSpec | None:
    if data is None:
        return None
    spec = WriteSpec(**data)
    if not _mentions_text(spec.arguments):
        raise SpecError(path, "mcp.write.arguments", "never passes {text}",
                        'put "{text}" where the tool takes the content to remember (e.g. {content: "{text}"})')
    if (spec.id is None) == (spec.id_pattern is None):
        raise SpecError(path, "mcp.write", "names " + ("neither id nor id_pattern" if spec.id is None else "both id and id_pattern"),
                        "give one: id, the dotted path of the stored item's id in the tool's answer (e.g. entities.0.name), "
                        "or id_pattern, a regex with the named group id over its text answer")
    if spec.id_pattern is not None:
        if "id" not in _regex_groups(path, "mcp.write.id_pattern", spec.id_pattern, "the named group id"):
            raise SpecError(path, "mcp.write.id_pattern", "lacks the named group id", "write (?P<id>...) into the regex")
    return spec


def _mcp_spec(path: Path, m: dict) -> McpSpec:
    write = _write_spec(path, m.get("write"))
    write_tools = tuple(m.get("write_tools", ()))
    if write_tools and write is None:
        raise SpecError(path, "mcp.write", "is missing: write_tools names write tools but not how an agent remembers "
                        "through them", 'add mcp.write: {tool: ..., arguments: {...: "{text}"}, id: ...} (see arms/recall/arm.yaml)')
    if write is not None and write_tools and write.tool not in write_tools:
        raise SpecError(path, "mcp.write.tool", f"is '{write.tool}', which write_tools does not list",
                        f"add '{write.tool}' to mcp.write_tools, or omit write_tools (it defaults to [{write.tool}])")
    return McpSpec(m["server"], tuple(m["command"]), m["search_tool"], tuple(m["required_tools"]),
                   write_tools or ((write.tool,) if write is not None else ()), tuple(m.get("write_command", ())),
                   _search_spec(path, m.get("search")), write)


def arm_file_fix(arm_dir: Path) -> str:
    return (f"name a file inside the arm's folder, relative to it, e.g. tasks/{{task}}/CLAUDE.md for "
            f"arms/{arm_dir.name}/tasks/<task>/CLAUDE.md (a copy, not a link out of the project)")


def load_arm(arm_dir: Path) -> ArmSpec:
    path = arm_dir / "arm.yaml"
    project = arm_dir.parent.parent  # arms/<name>
    inside_project(arm_dir, project, path, "(arm folder)", arm_dir.name, FOLDER_FIX)
    inside_project(path, project, path, "(file)", path.name, "make it a file of the arm folder, not a link out of it")
    data = read_yaml(path)
    validate(data, "arm", path)
    _require_folder_name(path, "name", data["name"])
    for i, f in enumerate(data.get("files", [])):  # the per-task file is checked again when it is read (arm_file)
        inside_project(arm_dir / f["source"], project, path, f"files[{i}].source", f["source"], arm_file_fix(arm_dir))
    _check_embedder(path, data)
    return ArmSpec(
        name=data["name"],
        kind=data["kind"],
        description=data["description"],
        instructions=data.get("instructions", ""),
        files=tuple(ArmFile(f["source"], f["dest"]) for f in data.get("files", [])),
        search_tool=data.get("search_tool"),
        mcp=_mcp_spec(path, m) if (m := data.get("mcp")) else None,
        ingest=tuple(data["ingest"]["command"]) if "ingest" in data else None,
        ingest_seconds=data.get("ingest", {}).get("timeout_seconds", 600),
        hooks=tuple(HookSpec(h["event"], tuple(h["command"])) for h in data.get("hooks", [])),
        uses=data.get("uses"),
        required_paths=tuple(data.get("required_paths", [])),
        root=arm_dir,
        memory_file=data.get("memory_file"),
        planted=PlantApi(tuple(p["plant"]), tuple(p["forget"]), tuple(p["count"]), dict(p["env"]), dict(p["kill_switch"]),
                         tuple(p.get("lanes", ())), p.get("lane_env")) if (p := data.get("planted")) else None,
        embedder=data.get("embedder"),
        image_of=data.get("image_of"),
    )


def arm_file(arm: ArmSpec, i: int, task_id: str) -> Path:
    """Where files[i] of the arm is for this task, refused (one SpecError) when it leads out of the project:
    '{task}' is only filled in here, and the file it names may be a link."""
    source = arm.files[i].source.replace("{task}", task_id)
    return inside_project(arm.root / source, arm.root.parent.parent, arm.root / "arm.yaml", f"files[{i}].source",
                          source, arm_file_fix(arm.root))


def provider(arm: ArmSpec, arms: dict[str, ArmSpec]) -> ArmSpec:
    """The arm whose image, store and server this arm runs on: itself, or the mcp arm it uses."""
    if arm.uses is None:
        return arm
    used = arms.get(arm.uses)
    if used is None or used.kind != "mcp":
        raise SpecError(arm.root / "arm.yaml", "uses", f"names '{arm.uses}', which is not an mcp arm",
                        "name an arm of kind mcp, e.g. recall")
    return used


def load_grid(path: Path) -> GridSpec:
    return grid_from_dict(read_yaml(path), path)


def _judges(data: dict, path: Path) -> dict:
    """The model judges a grid names: a list of model ids, or a published panel's name (its models, asked through the
    OpenAI-compatible endpoint), and where they are asked."""
    from runner.protocols.personal.openai_judges import PRESETS

    judges, endpoint = data.get("judges", ()), data.get("judge_endpoint")
    if endpoint is not None and not judges:
        raise SpecError(path, "judge_endpoint", "is set, but the grid names no judges", "name judges, or remove it")
    if isinstance(judges, str):
        if endpoint not in (None, "openai"):
            raise SpecError(path, "judge_endpoint", f"is {endpoint}, but the named panel '{judges}' is asked through "
                            "the OpenAI-compatible endpoint", "remove judge_endpoint")
        return {"judges": PRESETS[judges], "judge_panel": judges, "judge_endpoint": "openai"}
    return {"judges": tuple(judges), "judge_endpoint": endpoint or "messages"}


def _models(data: dict, path: Path) -> tuple[str, ...]:
    """`model: X` (one model) or `models: [X, Y]` (several), never both."""
    if "model" in data and "models" in data:
        raise SpecError(path, "models", "is set beside model", "name one model with model: or several with models:, not both")
    return tuple(data["models"]) if "models" in data else (data["model"],) if "model" in data else ()


def grid_from_dict(data: dict, path: Path) -> GridSpec:
    """A grid spec from its YAML mapping (a grid file, or a preregistration's `grid`); `path` names it in errors."""
    validate(data, "grid", path)
    tasks = data.get("tasks", "all")
    return GridSpec(
        name=data["name"],
        tasks=tasks if tasks == "all" else tuple(tasks),
        arms=tuple(data["arms"]),
        agents=tuple(data["agents"]),
        seeds=data["seeds"],
        conditions=tuple(data["conditions"]),
        network=data.get("network", "none"),
        allow_hosts=tuple(data.get("allow_hosts", ())),
        models=_models(data, path),
        prices=data.get("prices", {}),
        disk_mib=data.get("disk_mib", DEFAULT_DISK_MIB),
        protocol=data.get("protocol", "coding"),
        suite=data.get("suite", DEFAULT_SUITE),
        cases=data.get("cases"),
        command_agents=data.get("command_agents", {}),
        budget_usd=data.get("budget_usd"),
        budgets_usd=data.get("budgets_usd", {}),
        limits=SessionLimits(**data.get("limits", {})),
        **_judges(data, path),
        unisolated_checkers=tuple(data.get("unisolated_checkers", ())),
        executor=data.get("executor", "local"),
        scheduler=data.get("scheduler"),
    )


def preset_names() -> list[str]:
    return sorted(p.name.removesuffix(".yaml") for p in resources.files("runner").joinpath("defaults").iterdir()
                  if p.name.endswith(".yaml"))


def preset_path(name: str) -> Path:
    if name not in preset_names():
        raise SpecError("--preset", name, "is not a shipped grid", f"use one of: {', '.join(preset_names())}, or --spec FILE")
    return Path(str(resources.files("runner").joinpath(f"defaults/{name}.yaml")))


def project_root() -> Path:
    """The checkout memgrid reads its tasks, arms and corpus from: MEMGRID_ROOT, else the working folder."""
    return Path(os.environ.get("MEMGRID_ROOT", ".")).resolve()


def _subdirs_with(root: Path, filename: str) -> list[Path]:
    return sorted(p.parent for p in root.glob(f"*/{filename}"))


@dataclass(frozen=True)
class SuiteSpec:
    """A named set of coding tasks with a corpus of its own, so adding a task to one suite never changes another's
    benchmark. memgrid's own suite is the tasks directly under tasks/ with its corpus settings in corpus/; any
    other is tasks/<name>/ (a suite.yaml and its task folders) with its corpus settings in corpus/suites/<name>/.
    A suite of another protocol hosts a benchmark as published (runner/sources/): its units are not coding tasks."""
    name: str
    title: str
    tasks_dir: Path
    corpus_dir: Path  # holds corpus.yaml, digests.yaml and build/
    source: dict = field(default_factory=dict, compare=False)  # where an imported suite came from
    protocol: str = "coding"  # the protocol its units run in (suite.yaml protocol)

    def task_dirs(self) -> list[Path]:
        return _subdirs_with(self.tasks_dir, "task.yaml")


def _tasks_dir(root: Path) -> Path:
    tasks_dir = root / "tasks"
    if not tasks_dir.is_dir():
        raise SpecError(tasks_dir, "(folder)", "does not exist",
                        "run memgrid from the project checkout, or set MEMGRID_ROOT to it")
    return tasks_dir


def load_suites(root: Path) -> dict[str, SuiteSpec]:
    """Every suite of the checkout, memgrid's own first; a task id names one task across all of them (an arm's
    per-task files and the ledger know a task by its id alone)."""
    tasks_dir = _tasks_dir(root)
    suites = {DEFAULT_SUITE: SuiteSpec(DEFAULT_SUITE, "memgrid's own coding tasks (the default grid's)", tasks_dir,
                                       root / "corpus")}
    for path in sorted(tasks_dir.glob("*/suite.yaml")):
        inside_project(path, root, path, "(file)", path.name, "make it a file of the suite folder, not a link out of it")
        data = read_yaml(path)
        validate(data, "suite", path)
        _require_folder_name(path, "name", data["name"])
        if (path.parent / "task.yaml").exists():
            raise SpecError(path, "(folder)", "is both a task and a suite", "move the task into a folder of its own")
        suites[data["name"]] = SuiteSpec(data["name"], data["title"], path.parent, root / "corpus" / "suites" / data["name"],
                                         data.get("source", {}), data.get("protocol", "coding"))
    seen: dict[str, str] = {}
    for suite in suites.values():
        for task_dir in suite.task_dirs():
            if task_dir.name in seen:
                raise SpecError(task_dir / "task.yaml", "id", f"'{task_dir.name}' is also a task of suite '{seen[task_dir.name]}'",
                                "give one of the two another id (and rename its folder)")
            seen[task_dir.name] = suite.name
    return suites


def suite_named(root: Path, name: str, where=Path("(command line)"), field_name: str = "--suite") -> SuiteSpec:
    """The suite called `name`; one SpecError naming `where` and `field_name` (a grid file's suite, or --suite)."""
    suites = load_suites(root)
    if name not in suites:
        raise SpecError(where, field_name, f"names unknown suite '{name}'", f"use one of: {', '.join(suites)}; a published "
                        "benchmark's suite exists once imported: memgrid task import --format FORMAT PATH (memgrid task "
                        "import --help names each format and its source)")
    return suites[name]


def load_suite_tasks(root: Path, suite: SuiteSpec | str = DEFAULT_SUITE) -> dict[str, TaskSpec]:
    """The tasks of one suite: what a grid of that suite runs and what its corpus is generated from."""
    spec = suite if isinstance(suite, SuiteSpec) else suite_named(root, suite)
    if spec.protocol != "coding":
        raise SpecError(spec.tasks_dir / "suite.yaml", "protocol", f"suite '{spec.name}' runs in the {spec.protocol} "
                        "protocol: its units are not coding tasks", "name a coding suite (memgrid task list shows them)")
    return {t.id: t for t in (load_task(d, root) for d in spec.task_dirs())}


def load_all_tasks(root: Path) -> dict[str, TaskSpec]:
    """Every coding task of every suite, by id (ids are unique across suites)."""
    return {t.id: t for suite in load_suites(root).values() if suite.protocol == "coding"
            for t in load_suite_tasks(root, suite).values()}


def grid_tasks(root: Path, grid: GridSpec, grid_path, field_name: str = "suite") -> dict[str, TaskSpec]:
    """The coding tasks a grid chooses from: its suite's (memgrid's own unless it names another); none for a suite
    that hosts a benchmark in another protocol, whose units its protocol reads. `grid_path` and `field_name` name
    where the suite was given (the grid file's suite, or --suite on the command line)."""
    suite = suite_named(root, grid.suite, grid_path, field_name)
    if suite.protocol != "coding":
        if suite.protocol != grid.protocol:
            raise SpecError(grid_path, field_name, f"names '{suite.name}', a suite of the {suite.protocol} protocol",
                            f"use protocol: {suite.protocol}, or name a {grid.protocol} suite")
        return {}
    return load_suite_tasks(root, suite)


def other_suites_tasks(root: Path, suite: str) -> frozenset[str]:
    """The ids of every task in a suite other than `suite` (by folder: nothing is loaded)."""
    if not (root / "tasks").is_dir():
        return frozenset()
    return frozenset(d.name for s in load_suites(root).values() if s.name != suite for d in s.task_dirs())


def suite_of_task(root: Path, task_id: str) -> SuiteSpec | None:
    return next((s for s in load_suites(root).values() if (s.tasks_dir / task_id / "task.yaml").is_file()), None)


def load_all_arms(root: Path) -> dict[str, ArmSpec]:
    arms_dir = root / "arms"
    if not arms_dir.is_dir():
        raise SpecError(arms_dir, "(folder)", "does not exist",
                        "run memgrid from the project checkout, or set MEMGRID_ROOT to it")
    return {a.name: a for a in map(load_arm, _subdirs_with(arms_dir, "arm.yaml"))}


def image_arm(arm: ArmSpec, arms: dict[str, ArmSpec]) -> ArmSpec:
    """The arm whose folder builds the image `arm` runs in: itself, or the arm named by its image_of (one
    product's image serving two arms, e.g. with its own embedder and with the shared one)."""
    if arm.image_of is None:
        return arm
    source = arms.get(arm.image_of)
    if source is None or source.image_of is not None or not (source.root / "Dockerfile").is_file():
        raise SpecError(arm.root / "arm.yaml", "image_of", f"names '{arm.image_of}', which is not an arm that builds an image",
                        "name an arm folder with a Dockerfile (and no image_of of its own)")
    return source
