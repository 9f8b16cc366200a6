"""Benchmarks hosted as published: one module per source format behind one seam (base.SourceFormat), listed in
registry.FORMATS; `memgrid task import --format NAME PATH` sees only the seam."""
