"""mempalace's own entry points on the arm image's python3.

    python3 -IS serve.py mcp                 # its MCP server over stdio (console script mempalace-mcp)
    python3 -IS serve.py cli mine DIR ...    # its command line (console script mempalace)

Its packages (pydeps/, resolved from requirements.txt with their sha256) come first on sys.path and nothing
else is seen: no user site, no dist-packages, no other arm's or memgrid's packages. The launcher's
environment says where its palace, its config and its embedding model are.
"""
import sys

sys.path[:0] = ["/opt/mempalace/pydeps"]

if sys.argv[1:2] == ["mcp"]:
    from mempalace.mcp_proxy import main
    sys.argv[:2] = ["mempalace-mcp"]
elif sys.argv[1:2] == ["cli"]:
    from mempalace.cli import main
    sys.argv[:2] = ["mempalace"]
else:
    sys.exit("usage: serve.py mcp | cli ARGS...")
sys.exit(main())
