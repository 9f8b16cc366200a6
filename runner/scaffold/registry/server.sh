#!/bin/sh
# __ARM__-server STORE: starts __PACKAGE__ __VERSION__'s own MCP server
# (its command __COMMAND__) over stdio, with its store in the folder STORE. arm.yaml's mcp.command starts
# it so for the agent and ingest.py for the ingest, with the same STORE: the store the ingest writes is
# the one every cell searches.
__OTHERS__#
# TODO: where does the product keep its store? It must end up inside STORE: anything written elsewhere is
# lost when the container goes, and the agent would search an empty memory. If the product takes that place
# from a variable or an option (its README says which), set it below, for example
#     export MEMORY_FILE_PATH="$store/memory.jsonl"
# As written, the home folder and the working folder are STORE, which covers a product that keeps its data
# under the home folder (~/.local/share/..., ~/.product/...) or in the folder it is started in.
set -e
store="$1"
shift
export HOME="$store"
cd "$store"
__START__
