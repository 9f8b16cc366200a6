"""mcp-memory-service's own command line (`memory ...`, its console script) on the arm image's python3.

    python3 -IS serve.py server          # its MCP server over stdio

Its packages (pydeps/, resolved from requirements.txt with their sha256) come first on sys.path and
nothing else is seen: no user site, no dist-packages, no other arm's or memgrid's packages (it needs
mcp<2, the sandbox image carries mcp 2). The environment, set by the launcher, says where its store
and its embedding model are and forbids downloads and the hash-embedding fallback.
"""
import sys

sys.path[:0] = ["/opt/mcp-memory-service/pydeps"]

from mcp_memory_service.cli.main import main  # noqa: E402

sys.argv[0] = "memory"
sys.exit(main())
