"""Arms: what each kind of arm brings to a cell, its ingest, and `memgrid arm check`."""
