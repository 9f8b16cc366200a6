"""recall: a small BM25 memory for coding agents.

`recall.ingest` turns a folder of JSONL session transcripts into a frozen, digest-stamped store;
`recall.server` serves that store read-only over MCP stdio (tools: search, get, recent).
"""

__version__ = "0.1.0"
