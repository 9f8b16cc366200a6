"""recall: a small BM25 memory for coding agents.

`recall.ingest` turns a folder of JSONL session transcripts into a digest-stamped store;
`recall.server` serves that store over MCP stdio (tools: search, get, recent; with --writable also
remember and forget, which change the store in place, each write committed atomically; its environment
selects a namespace, the kill switch, retrieval lanes and a call log); `recall.admin` (recall-admin)
plants memories into a namespace of a store root, forgets them by id and counts them.
"""

__version__ = "0.3.0"
