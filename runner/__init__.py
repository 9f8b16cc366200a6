"""memgrid: the controller that runs, proves, grades and ledgers every cell of a memory benchmark."""

__version__ = "0.1.0"
