"""The source formats memgrid imports, by name (memgrid task import --format)."""

from runner.errors import UserError
from runner.results.reward import RewardMapping
from runner.sources.amb import AmbFormat
from runner.sources.base import SourceFormat
from runner.sources.memora import MemoraFormat
from runner.sources.smriti import SmritiFormat
from runner.sources.traptask import TrapTaskFormat

FORMATS: dict[str, type[SourceFormat]] = {cls.name: cls for cls in (AmbFormat, TrapTaskFormat, MemoraFormat, SmritiFormat)}


def source_format(name: str) -> SourceFormat:
    if name not in FORMATS:
        raise UserError(f"--format: '{name}' is not a format memgrid imports — fix: use one of {', '.join(FORMATS)}")
    return FORMATS[name]()


def export_format(name: str) -> SourceFormat:
    """A format whose benchmark has tools of its own that read runs (memgrid export --format)."""
    exporting = [n for n, cls in FORMATS.items() if cls.export is not SourceFormat.export]
    if name not in exporting:
        raise UserError(f"--format: '{name}' is not a format memgrid exports — fix: use one of {', '.join(exporting)}")
    return FORMATS[name]()


def reward_mapping(name: str | None) -> RewardMapping | None:
    """The reward mapping of a format's card; None for a format (or memgrid's own units) that defines none."""
    return FORMATS[name].reward if name in FORMATS else None
