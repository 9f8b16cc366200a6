"""mempalace's ingest: the corpus's sessions mined into a palace by the product's own import command,
`mempalace mine`, which chunks each file into drawers, embeds them with chromadb's ONNX MiniLM and files
them into its ChromaDB store; this script only lays the sessions out as files for it to mine.

    mempalace-ingest --corpus DIR --store DIR

Each session becomes <session id>.md (its rendered lines, the first `date: <ts>`) in a scratch folder named
`sessions`, mined as the wing `sessions`. The count is the distinct source files among the drawers of the
product's store (its chroma.sqlite3, read only) after the mine, so a file the product skipped shows as a
shortfall (memgrid_corpus.run_ingest); mine exits 0 when it files nothing (a missing embedding model, for
one), so what it said is logged first.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path[:0] = ["/opt/memgrid/lib"]

from memgrid_corpus import count, progress, run_ingest  # noqa: E402


def session_file(session):
    """<session id>.md as mine reads it: the first line `date: <ts>`, then the session's rendered lines."""
    return (f"date: {session.date}\n" if session.date else "") + session.text + "\n"


# mine skips a file whose text is shorter than the product's min_chunk_size (50 characters by default) and exits 0:
# a one-line turn such as LoCoMo's 'Jon said, "Bye!"' would be a lost write, which the read-back refuses and the
# cell is discarded. The product's own setting, kept in its config beside the palace (STORE/.mempalace, the
# wrapper's MEMPALACE_CONFIG_DIR), makes it file every session it is given; longer files are chunked as by default.
MIN_CHUNK_SIZE = 1


def configure(store):
    """The palace's config.json, written before the product's first command in a fresh store, with min_chunk_size."""
    folder = os.path.join(store, ".mempalace")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as f:
        json.dump({"min_chunk_size": MIN_CHUNK_SIZE}, f)


def write(store, found):
    configure(store)
    with tempfile.TemporaryDirectory(prefix="mempalace-ingest-") as tmp:
        folder = os.path.join(tmp, "sessions")
        os.mkdir(folder)
        for s in found:
            with open(os.path.join(folder, f"{s.id}.md"), "w", encoding="utf-8") as f:
                f.write(session_file(s))
        lines, returncode = mine(store, folder)
    said = " | ".join(l.strip() for l in lines if l.strip())[-400:]
    if returncode != 0:
        raise RuntimeError(f"mempalace mine exited {returncode}: {said}")
    print(f"mempalace mine said: {said}", file=sys.stderr)
    if not found:  # nothing mined: the palace may not even have its database
        return 0
    return count(os.path.join(store, "chroma.sqlite3"),
                 "SELECT count(DISTINCT string_value) FROM embedding_metadata WHERE key = 'source_file'")


FILED = re.compile(r"\[\s*(\d+)/(\d+)\]")  # mine's line per file: "  + [  12/4915] <file>   +5"


def mine(store, folder):
    """`mempalace mine` over the folder; its lines (stdout and stderr), each file it reports passed on as progress."""
    with subprocess.Popen(["mempalace", store, "mine", folder, "--wing", "sessions"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True) as process:
        lines = []
        for line in process.stdout:
            lines.append(line)
            filed = FILED.search(line)
            if filed:
                progress(int(filed.group(1)), int(filed.group(2)))
    return lines, process.returncode


if __name__ == "__main__":
    sys.exit(run_ingest("mempalace-ingest", "mempalace", "chromadb", write, local_model="all-MiniLM-L6-v2 (int8 ONNX)"))
