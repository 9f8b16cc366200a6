"""The source formats memgrid imports, by name (memgrid task import --format), and the one way a protocol reaches a
suite one of them wrote (`hosted_suite`, `HostedSuite`): protocols import this module, never a format's."""

from dataclasses import dataclass
from pathlib import Path

from runner.errors import SpecError, UserError
from runner.plan.spec import DEFAULT_SUITE, project_root, suite_named
from runner.results.reward import RewardMapping
from runner.sources.amb import AmbFormat
from runner.sources.base import SourceFormat
from runner.sources.locomo import LocomoFormat
from runner.sources.memora import MemoraFormat
from runner.sources.smriti import SmritiFormat
from runner.sources.traptask import TrapTaskFormat

FORMATS: dict[str, type[SourceFormat]] = {cls.name: cls for cls in (AmbFormat, TrapTaskFormat, MemoraFormat, SmritiFormat,
                                                                   LocomoFormat)}
SOLUTIONS: dict[str, type[SourceFormat]] = {cls.solution_key: cls for cls in FORMATS.values() if cls.solution_key}
DEFAULT_FORMAT = AmbFormat.name  # memgrid task import without --format: the format of coding suites


def source_format(name: str) -> SourceFormat:
    if name not in FORMATS:
        raise UserError(f"--format: '{name}' is not a format memgrid imports — fix: use one of {', '.join(FORMATS)}")
    return FORMATS[name]()


def exporting() -> list[str]:
    """The formats whose benchmark has tools of its own that read runs (memgrid export --format)."""
    return [n for n, cls in FORMATS.items() if cls.export is not SourceFormat.export]


def export_format(name: str) -> SourceFormat:
    """A format whose benchmark has tools of its own that read runs (memgrid export --format)."""
    if name not in exporting():
        raise UserError(f"--format: '{name}' is not a format memgrid exports — fix: use one of {', '.join(exporting())}")
    return FORMATS[name]()


def reward_mapping(name: str | None) -> RewardMapping | None:
    """The reward mapping of a format's card; None for a format (or memgrid's own units) that defines none."""
    return FORMATS[name].reward if name in FORMATS else None


def published_rows(name: str | None) -> tuple[dict[str, tuple[float, ...]], str, str]:
    """The published rows a personal run is set beside, what they measure and whose they are: its hosted format's
    (none when it published none memgrid reproduces), and for memgrid's generated persons, which are modelled on
    Memora's FAMA, Memora's (read as not comparable)."""
    cls = FORMATS.get(name, MemoraFormat) if name else MemoraFormat
    return cls.published, cls.published_about, cls.published_source


def own_scoring(name: str | None) -> tuple[dict[str, tuple[str, ...]], str]:
    """How a format's own scores are pooled over question kinds, and what they are (none for memgrid's own units)."""
    cls = FORMATS.get(name) if name else None
    return (cls.own_pools, cls.own_about) if cls else ({}, "")


def published_own(name: str | None) -> tuple[dict[str, tuple[float, str]], tuple[str, str] | None, str]:
    """A format's published figures of one of its own scores, which score and pool they are, and why they differ
    from memgrid's (none for memgrid's own units)."""
    cls = FORMATS.get(name) if name else None
    return (cls.published_own, cls.published_own_score, cls.published_own_note) if cls else ({}, None, "")


def hosting(protocol: str) -> list[str]:
    """The formats whose suites run in `protocol`."""
    return [n for n, cls in FORMATS.items() if cls.protocol == protocol]


@dataclass(frozen=True)
class HostedSuite:
    """A suite a source format wrote, as a run keeps it (Protocol.prepare) and its cells reach it, in every protocol:
    by name, resolved in each checkout (a dask worker's is not the controller's)."""
    suite: str
    format: str

    def folder(self, root: Path | None) -> Path:
        return (root or project_root()) / "tasks" / self.suite

    def source(self) -> SourceFormat:
        return source_format(self.format)

    def lock_entry(self) -> dict:
        return {"suite": self.suite, "format": self.format}


def hosted_suite(grid, grid_path, protocol: str, root: Path | None = None) -> HostedSuite | None:
    """The grid's hosted suite, refused in one line unless a format of `protocol` wrote it; None: memgrid's own units
    (no suite named)."""
    if grid.suite == DEFAULT_SUITE:
        return None
    suite = suite_named(root or project_root(), grid.suite, grid_path, "suite")
    fmt = FORMATS.get(suite.source.get("format"))
    if suite.protocol != protocol or fmt is None or fmt.protocol != protocol:
        formats = " or ".join(f"--format {n}" for n in hosting(protocol)) or "(no format hosts it yet)"
        raise SpecError(grid_path, "suite", f"names '{suite.name}', a suite of the {suite.protocol} protocol, not "
                        f"{protocol}", f"name a suite that memgrid task import {formats} wrote, or drop suite")
    return HostedSuite(suite.name, fmt.name)


def formats_help() -> str:
    """`memgrid task import --format`'s --help: every format and the protocol it hosts in."""
    return "The source format: " + "; ".join(f"{n} (a {cls.protocol} suite)" for n, cls in FORMATS.items()) + "."


def sources_help() -> str:
    """`memgrid task import PATH`'s --help: what PATH is for each format."""
    return "The source: " + "; ".join(f"for {n}, {cls.about}" for n, cls in FORMATS.items()) + "."


def option_help(option: str) -> str:
    """An import option's --help: the format that takes it, then what it does."""
    owner = next(n for n, cls in FORMATS.items() if option in cls.options)
    return f"{owner}: {FORMATS[owner].options[option]}"


def exports_help() -> str:
    """`memgrid export --format`'s --help: what each exporting format writes."""
    return "Whose records: " + "; ".join(f"{n} ({FORMATS[n].export_about})" for n in exporting()) + "."
