"""Ingest: each memory product writes the condition's corpus into its own store, once per
(arm, condition, seed), in a container of the arm's image, through the arm's own write path.

The store is then frozen: its tar and digest live in runs/<run_id>/stores/, every cell gets a
fresh copy in its bundle, and nothing a cell does writes back. The ingest report (documents
stored, wall time) says whether the store holds what the corpus held. A store is also kept in
the store cache (runner/arms/store_cache.py), keyed by everything that determines it, and any
later run with the same inputs takes it from there instead of ingesting again.
"""

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from runner.arms import store_cache
from runner.env.archive import Entry, UnsafeArchive, pack, safe_entries
from runner.env.bundle import AGENT_UID
from runner.corpus.build import MANIFEST
from runner.digest import sha256_bytes, sha256_file, tree_digest
from runner.errors import UserError
from runner.env import embedder as shared_embedder
from runner.env.images import ImageRef
from runner.env.containers import CELL_LABEL, ROLE_LABEL, RUN_LABEL, Limits, hardened, remove_quietly
from runner.env.sandbox import remove_run_containers
from runner.plan.spec import ArmSpec

INGEST_ROOT = "/sandbox/ingest"


@dataclass(frozen=True)
class StoreSnapshot:
    arm: str
    condition: str
    seed: int
    entries: tuple[Entry, ...]  # the store's files, relative to the store folder
    digest: str
    report: dict  # documents, corpus_documents, seconds, exit_code, log tail
    source: str = "ingested"  # ingested (by this run) | cache (the store cache) | run (an earlier attempt of this run)
    cache_key: str | None = None

    @property
    def empty(self) -> bool:
        return self.report.get("documents", 0) == 0 and self.report.get("corpus_documents", 0) > 0


def fill(command: tuple[str, ...], **values: str) -> list[str]:
    return [part.format(embedder_url=shared_embedder.EMBEDDER_URL, **values) for part in command]


def corpus_entries(corpus_dir: Path) -> list[Entry]:
    entries = [Entry(f"ingest/corpus/docs/{p.name}", p.read_bytes()) for p in sorted((corpus_dir / "docs").glob("*.jsonl"))]
    entries.append(Entry(f"ingest/corpus/{MANIFEST}", (corpus_dir / MANIFEST).read_bytes()))
    return entries


def store_receipt(entries: list[Entry]) -> dict:
    """What the store says of itself (store.json): documents held, model tokens spent, local model."""
    receipt = next((e for e in entries if e.path == "store.json"), None)
    return {} if receipt is None else json.loads(receipt.data)


def ingest(client, image: str, arm: ArmSpec, corpus_dir: Path, condition: str, seed: int, *, run_id: str,
           limits: Limits = Limits(memory="2g"), embedder: str | None = None, log=None) -> StoreSnapshot:
    """`embedder`: the shared embedder's image, for an arm with `embedder: shared`. `log`: where a long ingest's
    progress lines go (documents done, documents per second, time left), every PROGRESS_SECONDS."""
    return ingest_documents(client, image, arm, corpus_entries(corpus_dir), condition, seed, run_id=run_id,
                            limits=limits, embedder=embedder, log=log)


def ingest_documents(client, image: str, arm: ArmSpec, docs: list[Entry], condition: str, seed: int, *, run_id: str,
                     limits: Limits = Limits(memory="2g"), embedder: str | None = None, log=None) -> StoreSnapshot:
    """ingest() of a corpus already read (corpus_entries): what a dask worker gets, away from the corpus folder."""
    namespace = f"{arm.name}-{condition}-seed{seed}"
    command = fill(arm.ingest, corpus=f"{INGEST_ROOT}/corpus", store=f"{INGEST_ROOT}/store", namespace=namespace)
    cell = f"ingest-{namespace}"
    started = time.monotonic()
    sidecar = _start_sidecar(client, arm, embedder, run_id, cell)
    # The ingest's command runs at its start, so it joins the embedder's namespace (started first, on 'none').
    args = hardened(image, user="1000:1000", network="none" if sidecar is None else f"container:{sidecar.container.id}",
                    limits=limits, labels={RUN_LABEL: run_id, CELL_LABEL: cell, ROLE_LABEL: "ingest"},
                    command=["timeout", "--kill-after=5", str(arm.ingest_seconds), *command], working_dir="/sandbox")
    container = None
    try:
        container = client.containers.create(**args)
        container.put_archive("/sandbox", pack(docs, uid=AGENT_UID, gid=AGENT_UID))
        container.start()
        watcher = None if log is None else watch_progress(container, f"ingest {arm.name} {condition} seed {seed}", log)
        code = container.wait(timeout=arm.ingest_seconds + 60)["StatusCode"]
        if watcher is not None:  # its stream has ended with the container: its last line comes before ours
            watcher.join(timeout=10)
        said = without_progress(container.logs(stdout=True, stderr=True).decode(errors="replace"))
        if code != 0:
            raise UserError(f"arms/{arm.name}/arm.yaml: ingest: exited {code} for {condition} seed {seed}: "
                            f"{said.strip()[-300:]!r}: fix: run 'memgrid arm check {arm.name}'")
        stream, _ = container.get_archive(f"{INGEST_ROOT}/store")
        raw = b"".join(stream)
        used = None if sidecar is None else _embedder_used(arm, sidecar, len(docs) - 1)
    finally:
        if container is not None:
            remove_quietly(container)
        if sidecar is not None:
            sidecar.stop()
    try:
        entries = safe_entries(raw, strip="store")
    except UnsafeArchive as e:
        raise UserError(f"arms/{arm.name}/arm.yaml: ingest wrote an unsafe store ({e}): fix: write regular files only") from None
    frozen = pack(entries)
    receipt = store_receipt(entries)
    report = {"namespace": namespace, "documents": int(receipt.get("documents", 0)), "corpus_documents": len(docs) - 1,
              "model_tokens": receipt.get("model_tokens"), "local_model": receipt.get("local_model"),
              "seconds": round(time.monotonic() - started, 2), "files": len(entries), "bytes": len(frozen),
              "log_tail": said.strip()[-500:], "embedder": used or own_embedder(arm)}
    return StoreSnapshot(arm.name, condition, seed, tuple(entries), sha256_bytes(frozen), report)


PROGRESS = "memgrid-ingest-progress"  # a driver's "PROGRESS DONE TOTAL" lines on stderr (memgrid_corpus.progress)
PROGRESS_SECONDS = 30.0


def watch_progress(container, what: str, log, every: float = PROGRESS_SECONDS) -> threading.Thread:
    """Follows the ingest container's stderr in the background and logs how far the driver says it is: its first
    report at once (`what: started, 1 of 4,915 documents`), then at most every `every` seconds
    (`what: 1,200 of 4,915 documents, 3.1/s, 20 min left`), the rate measured from the first report so the product's
    start does not count as writing. A driver that reports nothing logs nothing; the thread ends with the stream."""
    def follow() -> None:
        first, last = None, None  # (time, done) of the first report; time of the last line logged
        pending = b""
        try:
            for chunk in container.logs(stdout=False, stderr=True, stream=True, follow=True):
                *lines, pending = (pending + chunk).split(b"\n")
                report = next((line.split() for line in reversed(lines) if line.startswith(PROGRESS.encode())), None)
                now = time.monotonic()
                if report is None or len(report) != 3 or (last is not None and now - last < every):
                    continue
                done, total = int(report[1]), int(report[2])
                if first is None:
                    first = (now, done)
                    log(f"{what}: started, {done:,} of {total:,} documents")
                else:
                    log(progress_line(what, done, total, (done - first[1]) / max(now - first[0], 1e-6)))
                last = now
        except Exception:  # the container went away under the stream: progress is advisory, the wait decides
            return

    thread = threading.Thread(target=follow, name=f"progress-{what}", daemon=True)
    thread.start()
    return thread


def progress_line(what: str, done: int, total: int, rate: float) -> str:
    seconds_left = (total - done) / rate if rate > 0 else None
    left = ("time left unknown" if seconds_left is None else f"{seconds_left:.0f} s left" if seconds_left < 120
            else f"{seconds_left / 60:.0f} min left")
    return f"{what}: {done:,} of {total:,} documents, {rate:.1f}/s, {left}"


def without_progress(said: str) -> str:
    """The container's output less the progress lines, so the log tail a report keeps says what the driver said."""
    return "\n".join(line for line in said.splitlines() if not line.startswith(PROGRESS))


def _start_sidecar(client, arm: ArmSpec, image: str | None, run_id: str, cell: str):
    if arm.embedder != "shared":
        return None
    if image is None:
        raise UserError(f"arms/{arm.name}/arm.yaml: embedder: shared, but no embedder image was built for this run: "
                        "fix: run it through 'memgrid grid' or 'memgrid arm check', which build images/embedder")
    try:
        return shared_embedder.start(client, image, run_id=run_id, cell_id=cell, network="none",
                                     lifetime=arm.ingest_seconds + 120)
    except shared_embedder.EmbedderNotReady as e:
        raise UserError(f"arms/{arm.name}/arm.yaml: embedder: shared: {e}: fix: run 'memgrid images build' and "
                        "check images/embedder") from None


def _embedder_used(arm: ArmSpec, sidecar, documents: int) -> dict:
    """The sidecar's record of the ingest: what the product asked of it. A product that stored documents
    without a single embedding request embedded them some other way: refused, not recorded as shared."""
    usage = sidecar.usage()
    if documents and usage["inputs"] < documents:
        raise UserError(f"arms/{arm.name}/arm.yaml: embedder: shared, but the product asked the shared embedder for "
                        f"{usage['inputs']} embeddings while storing {documents} documents: fix: pass "
                        "\"{embedder_url}\" where the product takes its embeddings endpoint")
    return {"kind": "shared", "model": sidecar.ready.get("model"), "model_sha256": sidecar.ready.get("model_sha256"),
            "tokenizer_sha256": sidecar.ready.get("tokenizer_sha256"), **usage}


def own_embedder(arm: ArmSpec) -> dict:
    """What an arm without the shared embedder embeds with: the product's own, in-process; with the model files
    its image carries out of pinned wheels (assets/ of its folder); "none" when its image carries no model."""
    files = model_files(arm.root)
    return {"kind": "own", "model_files": files} if files else {"kind": "none"}


def model_files(folder: Path) -> dict[str, str]:
    """sha256 of each file taken out of pinned wheels into an image's build context (its assets/)."""
    assets = Path(folder) / "assets"
    return {p.relative_to(assets).as_posix(): sha256_file(p) for p in sorted(assets.rglob("*"))
            if p.is_file() and not p.name.startswith(".")}


def save(snapshot: StoreSnapshot, run_dir: Path) -> Path:
    folder = run_dir / "stores" / snapshot.arm / f"{snapshot.condition}-seed{snapshot.seed}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "store.tar").write_bytes(pack(list(snapshot.entries)))
    (folder / "report.json").write_text(json.dumps({**snapshot.report, "digest": snapshot.digest}, indent=2, sort_keys=True) + "\n")
    return folder


def store_costs(stores: dict) -> dict[str, dict]:
    """What each arm's ingest cost, for run.json: keyed arm/condition-seedN, the figures its report
    recorded (store MiB is the frozen store's tar, the bytes every cell of that store receives)."""
    return {f"{s.arm}/{s.condition}-seed{s.seed}": {
        "digest": s.digest, "documents": s.report.get("documents"), "corpus_documents": s.report.get("corpus_documents"),
        "seconds": s.report.get("seconds"), "store_mib": round(s.report.get("bytes", 0) / 2**20, 3),
        "model_tokens": s.report.get("model_tokens"), "local_model": s.report.get("local_model"),
        "embedder": s.report.get("embedder"), "source": s.source, "cache_key": s.cache_key,
        **({"node": s.report["node"]} if s.report.get("node") else {})}
        for s in sorted(stores.values(), key=lambda s: (s.arm, s.condition, s.seed)) if isinstance(s, StoreSnapshot)}


def load(run_dir: Path, arm: str, condition: str, seed: int) -> StoreSnapshot | None:
    """A store an earlier attempt of this run ingested (resume), checked against its recorded digest."""
    folder = run_dir / "stores" / arm / f"{condition}-seed{seed}"
    if not (folder / "store.tar").is_file():
        return None
    raw = (folder / "store.tar").read_bytes()
    report = json.loads((folder / "report.json").read_text())
    if sha256_bytes(raw) != report["digest"]:
        raise UserError(f"{folder}/store.tar: does not match its recorded digest: fix: delete {folder} to ingest again")
    return StoreSnapshot(arm, condition, seed, tuple(safe_entries(raw)), report["digest"], report)


def _arm_image(arm: ArmSpec, images_by_arm: dict) -> ImageRef:
    if arm.name not in images_by_arm:
        raise UserError(f"arms/{arm.name}/: an arm with an ingest needs its own image: fix: add arms/{arm.name}/Dockerfile")
    return images_by_arm[arm.name]


def arm_key_inputs(arm: ArmSpec, image: ImageRef, embedder: str | None) -> dict:
    """The arm's part of its stores' keys, the same for each of its corpora (its folder and model files hashed once).
    `embedder`: the shared embedder's image tag (content-addressed) for an arm with `embedder: shared`."""
    used = {"kind": "shared", "image": embedder} if arm.embedder == "shared" else own_embedder(arm)
    return {"arm": arm.name, "arm_digest": tree_digest(arm.root), "image_id": image.id, "ingest": tuple(arm.ingest),
            "embedder": used}


def corpus_store_key(arm_inputs: dict, corpus_dir: Path, condition: str, seed: int) -> store_cache.StoreKey:
    return store_cache.StoreKey(**arm_inputs, corpus_digest=store_cache.corpus_digest(corpus_dir), condition=condition,
                                seed=seed)


def store_key(arm: ArmSpec, image: ImageRef, corpus_dir: Path, condition: str, seed: int,
              embedder: str | None) -> store_cache.StoreKey:
    return corpus_store_key(arm_key_inputs(arm, image, embedder), corpus_dir, condition, seed)


class StoreBuild(Protocol):
    """Where a store is ingested: on this engine (LocalStoreBuild) or on a cluster's workers (the dask executor's)."""

    def __call__(self, arm: ArmSpec, image: ImageRef, corpus_dir: Path, condition: str, seed: int) -> StoreSnapshot:
        """The store ingested now."""

    def stop(self) -> None:
        """Ctrl-C or SIGTERM: end every ingest in flight now (its containers removed), not at its timeout."""


class LocalStoreBuild:
    def __init__(self, client, *, run_id: str, embedder: str | None, log):
        self.client, self.run_id, self.embedder, self.log = client, run_id, embedder, log

    def __call__(self, arm: ArmSpec, image: ImageRef, corpus_dir: Path, condition: str, seed: int) -> StoreSnapshot:
        return ingest(self.client, image.tag, arm, corpus_dir, condition, seed, run_id=self.run_id,
                      embedder=self.embedder, log=self.log)

    def stop(self) -> None:
        remove_run_containers(self.client, self.run_id)


def _ensure(build: StoreBuild, arm: ArmSpec, image: ImageRef, corpus_dir: Path, condition: str, seed: int,
            run_dir: Path, log, key: store_cache.StoreKey) -> StoreSnapshot:
    """This run's store: the one an earlier attempt of the run froze (resume), else the cached one, else ingested
    now (and cached). run.json records which (`stores.<arm>/<condition>-seed<n>.source`)."""
    snapshot = load(run_dir, arm.name, condition, seed)
    if snapshot is not None:
        return StoreSnapshot(**{**vars(snapshot), "source": snapshot.report.get("source", "run"), "cache_key": key.key})
    started = time.monotonic()
    cached = store_cache.read(key, log)
    if cached is not None:
        raw, report = cached
        report = {**report, "source": "cache"}
        snapshot = StoreSnapshot(arm.name, condition, seed, tuple(safe_entries(raw)), report["digest"], report, "cache", key.key)
        save(snapshot, run_dir)
        log(f"store {arm.name} {condition} seed {seed} from the store cache ({key.key[:12]}, {len(raw) / 2**20:.1f} MiB "
            f"in {time.monotonic() - started:.2f}s; ingested once in {report.get('seconds')}s)")
        return snapshot
    snapshot = build(arm, image, corpus_dir, condition, seed)
    snapshot = StoreSnapshot(**{**vars(snapshot), "report": {**snapshot.report, "source": "ingested"}, "cache_key": key.key})
    folder = save(snapshot, run_dir)
    store_cache.write(key, (folder / "store.tar").read_bytes(), snapshot.report)  # the tar save() just packed
    rate = snapshot.report["documents"] / max(snapshot.report["seconds"], 0.01)
    node = f" on node {snapshot.report['node']}" if snapshot.report.get("node") else ""
    log(f"ingested {arm.name} {condition} seed {seed}{node}: {snapshot.report['documents']} of "
        f"{snapshot.report['corpus_documents']} documents in {snapshot.report['seconds']}s ({rate:.0f}/s; cached as {key.key[:12]})")
    return snapshot


def ensure_stores(client, arms: list[ArmSpec], pairs, settings, run_dir: Path, images_by_arm: dict, *, run_id: str,
                  log=print, embedder: str | None = None, parallel: int = 1,
                  build: StoreBuild | None = None) -> dict[tuple[str, str, int], StoreSnapshot]:
    """One frozen store per (arm with an ingest, condition, seed): this run's, the cache's, or ingested now.
    `embedder`: the shared embedder's image, for arms with `embedder: shared`. `parallel`: how many stores are
    ingested at once; they are independent (each its own container and corpus), so the order changes no store.
    `build`: where a store is ingested (default: this engine)."""
    build = build or LocalStoreBuild(client, run_id=run_id, embedder=embedder, log=log)
    ingesting = [(arm, _arm_image(arm, images_by_arm)) for arm in {a.name: a for a in arms if a.ingest is not None}.values()]
    keyed = [(arm, image, arm_key_inputs(arm, image, embedder)) for arm, image in ingesting]
    jobs = [(arm, image, condition, seed, inputs) for arm, image, inputs in keyed for condition, seed in pairs]

    def make(job) -> StoreSnapshot:
        arm, image, condition, seed, inputs = job
        corpus = settings.condition_dir(condition, seed)
        return _ensure(build, arm, image, corpus, condition, seed, run_dir, log, corpus_store_key(inputs, corpus, condition, seed))

    if parallel <= 1 or len(jobs) <= 1:
        with stopped_on_interrupt(build):
            return {(job[0].name, job[2], job[3]): make(job) for job in jobs}
    with ThreadPoolExecutor(max_workers=min(parallel, len(jobs)), thread_name_prefix="ingest") as pool:
        futures = {pool.submit(make, job): (job[0].name, job[2], job[3]) for job in jobs}
        try:
            with stopped_on_interrupt(build):
                done = {futures[f]: f.result() for f in as_completed(futures)}
        except BaseException:  # one failed: start no other (those running finish, and are cached, or time out)
            for f in futures:
                f.cancel()
            raise
    return {key: done[key] for key in futures.values()}


@contextmanager
def stopped_on_interrupt(build: StoreBuild):
    """Ctrl-C or SIGTERM while stores are built ends the ingests in flight at once (their containers removed, so
    the threads waiting on them return), instead of leaving them running to their timeout, up to hours."""
    try:
        yield
    except KeyboardInterrupt:
        build.stop()
        raise


EMPTY = "empty"  # the store an arm's own ingest makes of no documents


def ensure_empty_stores(client, arms: list[ArmSpec], run_dir: Path, images_by_arm: dict, *, run_id: str,
                        log=print, embedder: str | None = None,
                        build: StoreBuild | None = None) -> dict[tuple[str, str, int], StoreSnapshot]:
    """Each arm's own ingest of an empty corpus, keyed (arm, "empty", 0): where a protocol whose agents write
    their own memories starts, so the store's format is always the product's own."""
    build = build or LocalStoreBuild(client, run_id=run_id, embedder=embedder, log=log)
    corpus = run_dir / "stores" / "empty-corpus"
    (corpus / "docs").mkdir(parents=True, exist_ok=True)
    (corpus / MANIFEST).write_text("")
    stores = {}
    with stopped_on_interrupt(build):
        for arm in {a.name: a for a in arms if a.ingest is not None}.values():
            image = _arm_image(arm, images_by_arm)
            stores[(arm.name, EMPTY, 0)] = _ensure(build, arm, image, corpus, EMPTY, 0, run_dir, log,
                                                   store_key(arm, image, corpus, EMPTY, 0, embedder))
    return stores
