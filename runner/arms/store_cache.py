"""The store cache: a frozen store kept outside runs/, addressed by everything that determines it, so any run
whose inputs match reuses it instead of ingesting again (a product's store can take hours to build).

<cache>/stores/<key>/
  store.tar     the frozen store (as runs/<id>/stores/<arm>/<condition>-seed<n>/store.tar)
  report.json   its ingest report, with its digest (sha256 of store.tar)
  key.json      the inputs the key is the sha256 of (StoreKey)

<cache> is $MEMGRID_CACHE, else $XDG_CACHE_HOME/memgrid, else ~/.cache/memgrid. A store is verified against its
digest whenever it is read; one that does not match is set aside and ingested again, never used.
`memgrid stores export | import` move entries between machines as one archive, each entry verified on import.
"""

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from runner.corpus.build import MANIFEST
from runner.digest import sha256_bytes, sha256_file, sha256_json
from runner.env.archive import Entry, UnsafeArchive, pack, safe_entries
from runner.errors import UserError

ENTRY_FILES = ("store.tar", "report.json", "key.json")


@dataclass(frozen=True)
class StoreKey:
    """Everything a store is a function of. Each field changes the key: the arm's folder (its ingest command and
    the code its image builds from), the image it ran in, the corpus (by its manifest's digest), the condition and
    seed (the namespace the ingest writes under), and the embedder (the shared sidecar's image, or the model files
    the product's own image carries)."""
    arm: str
    arm_digest: str
    image_id: str
    ingest: tuple[str, ...]
    corpus_digest: str
    condition: str
    seed: int
    embedder: dict

    @property
    def key(self) -> str:
        return sha256_json(asdict(self))


def cache_root() -> Path:
    if os.environ.get("MEMGRID_CACHE"):
        return Path(os.environ["MEMGRID_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "memgrid"


def stores_dir() -> Path:
    return cache_root() / "stores"


def entry_dir(key: str) -> Path:
    return stores_dir() / key


def read(key: StoreKey, log=print) -> tuple[bytes, dict] | None:
    """The cached store's tar and report, verified; None when absent or when it no longer matches its digest
    (then set aside under stores/.bad-*, said in one line, and ingested again)."""
    folder = entry_dir(key.key)
    if not (folder / "store.tar").is_file() or not (folder / "report.json").is_file():
        return None
    raw = (folder / "store.tar").read_bytes()
    report = json.loads((folder / "report.json").read_text())
    if sha256_bytes(raw) != report.get("digest"):
        aside = folder.with_name(f".bad-{folder.name}-{int(time.time())}")
        os.replace(folder, aside)
        log(f"store cache: {folder}/store.tar does not match its recorded digest; set aside as {aside.name}, ingesting again")
        return None
    try:
        os.utime(folder)  # when it was last used, for prune
    except OSError:  # a cache this user may read but not write (a team's shared one): still a store to use
        pass
    return raw, report


def write(key: StoreKey, raw: bytes, report: dict) -> Path:
    """Put a store in the cache whole or not at all; a run that cached the same key first wins (same inputs)."""
    stores = stores_dir()
    stores.mkdir(parents=True, exist_ok=True)
    target = entry_dir(key.key)
    if target.exists():
        return target
    staging = Path(tempfile.mkdtemp(prefix=f".{key.key[:12]}-", dir=stores))
    try:
        (staging / "store.tar").write_bytes(raw)
        (staging / "report.json").write_text(json.dumps({**report, "digest": sha256_bytes(raw)}, indent=2, sort_keys=True) + "\n")
        (staging / "key.json").write_text(json.dumps(asdict(key), indent=2, sort_keys=True) + "\n")
        os.rename(staging, target)
    except OSError:
        if not target.exists():
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


@dataclass(frozen=True)
class CachedStore:
    key: str
    inputs: dict
    report: dict
    bytes: int
    last_used: float

    @property
    def label(self) -> str:
        return f"{self.inputs['arm']} {self.inputs['condition']} seed {self.inputs['seed']}"


def entries() -> list[CachedStore]:
    out = []
    for folder in sorted(stores_dir().glob("*")) if stores_dir().is_dir() else []:
        if folder.name.startswith(".") or not (folder / "key.json").is_file():
            continue
        out.append(CachedStore(folder.name, json.loads((folder / "key.json").read_text()),
                               json.loads((folder / "report.json").read_text()), (folder / "store.tar").stat().st_size,
                               folder.stat().st_mtime))
    return sorted(out, key=lambda s: (s.inputs["arm"], s.inputs["condition"], s.inputs["seed"], s.key))


def remove(key: str) -> None:
    shutil.rmtree(entry_dir(key))


def set_aside() -> list[Path]:
    """Entries that failed their digest check (read), kept only until the next prune."""
    return sorted(stores_dir().glob(".bad-*")) if stores_dir().is_dir() else []


@dataclass(frozen=True)
class SavedImage:
    """An image the exported stores were ingested in, as `docker save` wrote it under its first tag."""
    id: str
    tags: tuple[str, ...]
    archive: bytes


def export(chosen: list[CachedStore], out: Path, images: list[SavedImage] = ()) -> int:
    """One archive of the chosen entries (stores/<key>/{store.tar,report.json,key.json}) and, when given, the
    images they were ingested in (images/<id>.tar and .json); returns its size."""
    files = [Entry(f"stores/{s.key}/{name}", (entry_dir(s.key) / name).read_bytes()) for s in chosen for name in ENTRY_FILES]
    for image in images:
        name = image.id.removeprefix("sha256:")
        files += [Entry(f"images/{name}.tar", image.archive),
                  Entry(f"images/{name}.json", json.dumps({"id": image.id, "tags": list(image.tags)}).encode())]
    data = pack(files)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, out)
    return len(data)


def image_ids(chosen: list[CachedStore]) -> list[str]:
    """The images the chosen stores were ingested in (each store's key holds its image's id)."""
    return sorted({s.inputs["image_id"] for s in chosen})


# load(archive, tags, id) -> None once the engine holds the image under those tags with that id, else why not
LoadImage = Callable[[bytes, tuple[str, ...], str], str | None]


def import_archive(path: Path, load: LoadImage | None = None) -> tuple[list[str], list[str], list[str]]:
    """Entries of an exported archive into this cache, each checked before it is written: its store against its
    recorded digest, its key against the sha256 of its inputs. Images the archive carries are loaded first
    (`load`: into this machine's engine, the id checked), so the stores' keys, which hold their image's id, match
    here. Returns (stores added, stores already here, image tags loaded)."""
    try:
        files = {e.path: e.data for e in safe_entries(path.read_bytes())}
    except (UnsafeArchive, OSError, ValueError) as e:
        raise UserError(f"{path}: not a store archive memgrid exported ({e}): fix: export it again with memgrid stores export")
    keys = sorted({p.split("/")[1] for p in files if p.startswith("stores/") and p.count("/") == 2})
    if not keys or any(not p.startswith(("stores/", "images/")) or p.count("/") != (2 if p.startswith("stores/") else 1)
                       for p in files):
        raise UserError(f"{path}: holds no stores/<key>/ entries: fix: give an archive made by memgrid stores export")
    added, present = [], []
    for key in keys:
        parts = {name: files.get(f"stores/{key}/{name}") for name in ENTRY_FILES}
        missing = [name for name, data in parts.items() if data is None]
        if missing:
            raise UserError(f"{path}: stores/{key}/ lacks {', '.join(missing)}: fix: export it again")
        inputs, report = json.loads(parts["key.json"]), json.loads(parts["report.json"])
        if sha256_json(inputs) != key:
            raise UserError(f"{path}: stores/{key}/key.json is not what the key names (its inputs hash to "
                            f"{sha256_json(inputs)[:12]}): fix: export it again; nothing was imported")
        if sha256_bytes(parts["store.tar"]) != report.get("digest"):
            raise UserError(f"{path}: stores/{key}/store.tar does not match its recorded digest: fix: export it again; "
                            "nothing was imported")
    loaded = []
    for name in sorted(p for p in files if p.startswith("images/") and p.endswith(".json")):
        about = json.loads(files[name])
        if load is None:
            raise UserError(f"{path}: carries images and no Docker engine was given to load them: fix: run memgrid "
                            "stores import where the engine answers")
        problem = load(files[name.removesuffix(".json") + ".tar"], tuple(about["tags"]), about["id"])
        if problem is not None:
            raise UserError(f"{path}: {name}: {problem}: fix: export it again; no store was imported")
        loaded += about["tags"]
    for key in keys:
        if entry_dir(key).is_dir():
            present.append(key)
            continue
        inputs = json.loads(files[f"stores/{key}/key.json"])
        write(StoreKey(**{**inputs, "ingest": tuple(inputs["ingest"])}), files[f"stores/{key}/store.tar"],
              json.loads(files[f"stores/{key}/report.json"]))
        added.append(key)
    return added, present, loaded


def corpus_digest(corpus_dir: Path) -> str:
    return sha256_file(corpus_dir / MANIFEST)
