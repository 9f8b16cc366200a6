"""mcp-server-qdrant's own entry point (its console script mcp-server-qdrant) on the arm image's python3.

    python3 -IS serve.py          # its MCP server over stdio (its default transport)

Its packages (pydeps/, resolved from requirements.txt with their sha256) come first on sys.path and nothing
else is seen: no user site, no dist-packages, no other arm's or memgrid's packages (it needs mcp<2 through
fastmcp 2.7, the sandbox image carries mcp 2). The launcher's environment says where its store and its
embedding model are and keeps fastembed off the network.
"""
import sys

sys.path[:0] = ["/opt/mcp-server-qdrant/pydeps"]

from mcp_server_qdrant.main import main  # noqa: E402

sys.argv[0] = "mcp-server-qdrant"
sys.exit(main())
