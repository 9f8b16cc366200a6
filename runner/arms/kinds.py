"""Arm kinds: one class per `kind:` an arm.yaml can name, each knowing what it brings to a cell.

A kind says what it places in the bundle (from the condition's corpus, or its frozen store),
whether its cells read the built corpus, whether it has an ingested store, which of its server's
tools are memory tools the gate must see offered and permitted, and what writing means for it
(its write path: the MCP tool an agent remembers through, or the writable file that is its
store), and where an agent in the sandbox finds its memory (`location`). Code outside this module
asks the kind; it never compares `arm.kind` with a name.
"""

from dataclasses import dataclass
from typing import ClassVar

from runner.env.archive import Entry
from runner.plan.spec import ArmSpec, McpSpec, TaskSpec

STORE_DIR = "/sandbox/store"  # where a cell's store lives in the sandbox (mcp arms, and files arms that write)
WORKSPACE = "/sandbox/workspace"


@dataclass(frozen=True)
class MemoryLocation:
    """Where an agent in the sandbox finds this arm's memory: what the scripted model looks at, as an agent
    that knows its arm would. At most one way is set; none: the arm gives nothing to look up."""
    tool: str | None = None  # the server's search tool, by its full name
    get_tool: str | None = None  # the tool that fetches one hit by id, if the server has one
    files: tuple[str, ...] = ()  # files to read, in order
    folder: str | None = None  # a folder of documents, one per session, to search by the prompt's words
    newest_first: bool = False  # the files hold dated notes oldest first: read the latest first
    call: dict | None = None  # how the search tool is called and read (spec.SearchSpec.as_config())

    def script(self, ranked_documents=tuple) -> dict:
        """The scripted model's `search` (images/model/memgrid-model-server): the search tool, or the files
        to read in order (a folder's documents as `ranked_documents()` names them, best first)."""
        if self.tool:
            return {"tool": self.tool, "get_tool": self.get_tool, "call": self.call}
        files = [f"{self.folder}/{n}.md" for n in ranked_documents()] if self.folder else list(self.files)
        return {"read": files, "newest_first": self.newest_first} if self.folder or self.files else {}


@dataclass(frozen=True)
class CellMemory:
    """What a cell's arm may draw on: the built corpora (corpus kinds), the task and the condition, and the
    store the cell starts from (its entries, relative to the store folder)."""
    memory: object | None  # corpus.build.MemorySource
    task: TaskSpec | None
    condition: str
    seed: int
    store: tuple[Entry, ...] = ()


class ArmKind:
    name: ClassVar[str]
    reads_corpus: ClassVar[bool] = False  # its cells depend on the condition's built corpus (ids include its digest)
    ingests: ClassVar[bool] = False  # it has a store that the arm's own ingest writes
    memory: ClassVar[bool] = False  # it gets the shared memory instruction text
    prefetches: ClassVar[bool] = False  # the harness searches its server before the session
    # It hands the agent every record, no search between: a benchmark's whole-history (long-context) track, which a
    # benchmark's own code may ask its model otherwise than over the memories a search returned.
    whole_history: ClassVar[bool] = False
    # A benchmark's submission: its own scripts build, search and answer (protocols/personal/submission.py), in the
    # personal protocol only, answered by the `submission` agent.
    submission: ClassVar[bool] = False

    def memory_entries(self, arm: ArmSpec, cell: CellMemory) -> list[Entry]:
        """Files placed in the bundle besides the fixture and the arm's own files."""
        return []

    def own_server(self, arm: ArmSpec) -> McpSpec | None:
        """The MCP server the agent's session talks to as this arm's memory."""
        return None

    def write_path(self, arm: ArmSpec) -> dict | None:
        """How an agent writes to this arm's memory: {"tool": name, "arguments", "id", "id_pattern"} (its server's
        write tool as arm.yaml's mcp.write calls and reads it) or {"file": path}; None: it cannot."""
        return None

    def location(self, arm: ArmSpec) -> MemoryLocation:
        return MemoryLocation()


class NoneKind(ArmKind):
    name = "none"


class FilesKind(ArmKind):
    name = "files"

    def memory_entries(self, arm: ArmSpec, cell: CellMemory) -> list[Entry]:
        if arm.memory_file is None:
            return []
        # Its writable file is its store: empty at the first session, what the agent left at the next.
        held = {e.path: e for e in cell.store}
        return [Entry(f"store/{arm.memory_file}", held[arm.memory_file].data if arm.memory_file in held else b"")]

    def write_path(self, arm: ArmSpec) -> dict | None:
        return None if arm.memory_file is None else {"file": f"{STORE_DIR}/{arm.memory_file}"}

    def location(self, arm: ArmSpec) -> MemoryLocation:
        return MemoryLocation(files=(f"{WORKSPACE}/CLAUDE.md",))


class CorpusKind(ArmKind):
    name = "corpus"
    reads_corpus = memory = whole_history = True

    def memory_entries(self, arm: ArmSpec, cell: CellMemory) -> list[Entry]:
        return [Entry(f"memory/{name}.md", text) for name, text in cell.memory.documents(cell.condition, cell.seed)]

    def location(self, arm: ArmSpec) -> MemoryLocation:
        return MemoryLocation(folder="/sandbox/memory")


class OracleKind(ArmKind):
    name = "oracle"
    reads_corpus = memory = True

    def memory_entries(self, arm: ArmSpec, cell: CellMemory) -> list[Entry]:
        return [Entry("agent/memory.md", cell.memory.evidence(cell.task, cell.condition, cell.seed).encode())]

    def location(self, arm: ArmSpec) -> MemoryLocation:
        return MemoryLocation(files=("/sandbox/agent/memory.md",), newest_first=True)  # evidence is dated oldest first


class McpKind(ArmKind):
    name = "mcp"
    reads_corpus = ingests = memory = True

    def memory_entries(self, arm: ArmSpec, cell: CellMemory) -> list[Entry]:
        return [Entry(f"store/{e.path}", e.data) for e in cell.store]

    def own_server(self, arm: ArmSpec) -> McpSpec | None:
        return arm.mcp

    def write_path(self, arm: ArmSpec) -> dict | None:
        return arm.mcp.write.as_config() if arm.mcp.write is not None else None

    def location(self, arm: ArmSpec) -> MemoryLocation:
        return MemoryLocation(tool=arm.mcp.prefix + arm.mcp.search_tool,
                              get_tool=arm.mcp.prefix + "get" if "get" in arm.mcp.required_tools else None,
                              call=arm.mcp.search.as_config())


class PrefetchKind(McpKind):
    """The harness, not the agent, searches the server of the mcp arm it uses; the session sees only the
    injected hits, so it has no server of its own and no write path."""
    name = "prefetch"
    prefetches = True

    def own_server(self, arm: ArmSpec) -> McpSpec | None:
        return None

    def write_path(self, arm: ArmSpec) -> dict | None:
        return None

    def location(self, arm: ArmSpec) -> MemoryLocation:
        return MemoryLocation(files=("/sandbox/agent/memory.md",))  # the injected hits, best first


class MemoraSubmissionKind(ArmKind):
    """A Memora submission: /app/build.sh, /app/search.sh and /app/answer.sh in the arm's own image. Its store is
    the index its build writes; nothing of it is placed in an agent's bundle."""
    name = "memora-submission"
    submission = True


KINDS: dict[str, ArmKind] = {k.name: k() for k in (NoneKind, FilesKind, CorpusKind, OracleKind, McpKind, PrefetchKind,
                                                   MemoraSubmissionKind)}


def kind_of(arm: ArmSpec) -> ArmKind:
    return KINDS[arm.kind]
