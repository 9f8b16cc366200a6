"""The source formats memgrid imports, by name (memgrid task import --format)."""

from runner.errors import UserError
from runner.sources.amb import AmbFormat
from runner.sources.base import SourceFormat
from runner.sources.memora import MemoraFormat
from runner.sources.traptask import TrapTaskFormat

FORMATS: dict[str, type[SourceFormat]] = {cls.name: cls for cls in (AmbFormat, TrapTaskFormat, MemoraFormat)}


def source_format(name: str) -> SourceFormat:
    if name not in FORMATS:
        raise UserError(f"--format: '{name}' is not a format memgrid imports — fix: use one of {', '.join(FORMATS)}")
    return FORMATS[name]()
