"""__ARM__: a small memory server for coding agents (scaffolded by `memgrid arm add`).

`__ARM__.ingest` turns a folder of JSONL session transcripts into a store folder;
`__ARM__.server` serves that store read-only over MCP stdio (tools: search, get).
Replace the scoring in server.py with your product; keep the tools' shapes.
"""

__version__ = "0.1.0"
