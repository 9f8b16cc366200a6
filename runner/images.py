"""Content-addressed images: base (pulled or built offline with debootstrap), sandbox, checker.

A tag is a hash of what defines the image (the base recipe; a Dockerfile, its context and the
parent image id), so an image is rebuilt only when that hash changes, and its id goes into run.json.
"""

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors

from .digest import sha256_bytes, sha256_json, tree_files
from .errors import EngineError

IMAGES_DIR = Path(__file__).resolve().parent.parent / "images"

# What every image starts from. python3 runs fixtures, checkers and the bundle verifier;
# python3-pytest runs the tests a fixture shows its agent.
BASE_RECIPE = {
    "suite": "bookworm",
    "variant": "minbase",
    "packages": ["python3", "python3-pytest"],
    "official_image": "debian:bookworm-slim",
}
DERIVED = ("sandbox", "checker")


@dataclass(frozen=True)
class ImageRef:
    role: str
    tag: str
    id: str


@dataclass(frozen=True)
class ImageSet:
    base: ImageRef
    sandbox: ImageRef
    checker: ImageRef

    def ids(self) -> dict[str, str]:
        return {"base": self.base.id, "sandbox": self.sandbox.id, "checker": self.checker.id}

    def tags(self) -> dict[str, str]:
        return {"base": self.base.tag, "sandbox": self.sandbox.tag, "checker": self.checker.tag}


def base_tag() -> str:
    return f"memgrid-base:{sha256_json(BASE_RECIPE)[:12]}"


def derived_tag(role: str, parent_id: str) -> str:
    context = IMAGES_DIR / role
    parts = [[p.relative_to(context).as_posix(), sha256_bytes(p.read_bytes())] for p in tree_files(context)]
    return f"memgrid-{role}:{sha256_json({'context': parts, 'parent': parent_id})[:12]}"


def find_image(client: docker.DockerClient, tag: str):
    try:
        return client.images.get(tag)
    except docker.errors.ImageNotFound:
        return None


def debian_mirror() -> str:
    """The host's own Debian mirror, so the offline build reaches what apt reaches here."""
    if os.environ.get("MEMGRID_DEBIAN_MIRROR"):
        return os.environ["MEMGRID_DEBIAN_MIRROR"]
    suite = BASE_RECIPE["suite"]
    candidates = []
    for f in sorted(Path("/etc/apt/sources.list.d").glob("*.sources")):
        for stanza in f.read_text().split("\n\n"):
            fields = dict(re.findall(r"^(\w[\w-]*):\s*(.+)$", stanza, re.M))
            if suite in fields.get("Suites", "").split() and "security" not in fields.get("URIs", ""):
                candidates += fields.get("URIs", "").split()
    sources_list = Path("/etc/apt/sources.list")
    if sources_list.exists():
        for line in sources_list.read_text().splitlines():
            m = re.match(r"^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)", line)
            if m and m.group(2) == suite and "security" not in m.group(1):
                candidates.append(m.group(1))
    if not candidates:
        raise EngineError(f"no Debian '{suite}' mirror in /etc/apt/sources*: fix: set MEMGRID_DEBIAN_MIRROR to a Debian mirror URL")
    return candidates[0]


def _build_base_debootstrap(client, tag: str, log) -> None:
    if os.geteuid() != 0:
        raise EngineError("building the base image offline needs root (debootstrap): fix: run 'sudo memgrid images build' once, or make a registry reachable")
    if not shutil.which("debootstrap"):
        raise EngineError("debootstrap is not installed: fix: 'sudo apt-get install debootstrap' (or run scripts/ensure-engine.sh)")
    mirror = debian_mirror()
    with tempfile.TemporaryDirectory(prefix="memgrid-base-", dir="/var/tmp") as tmp:
        rootfs = Path(tmp) / "rootfs"
        log(f"debootstrap {BASE_RECIPE['suite']} from {mirror} (about a minute)")
        cmd = ["debootstrap", f"--variant={BASE_RECIPE['variant']}",
               f"--include={','.join(BASE_RECIPE['packages'])}", BASE_RECIPE["suite"], str(rootfs), mirror]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        if proc.returncode != 0:
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
            raise EngineError(f"debootstrap failed: {' | '.join(tail)}: fix: check that {mirror} is reachable")
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for p in (rootfs / junk).glob("*"):
                if p.is_file():
                    p.unlink()
        archive = Path(tmp) / "rootfs.tar"
        subprocess.run(["tar", "-C", str(rootfs), "-cf", str(archive), "."], check=True, timeout=600)
        repo, version = tag.split(":")
        client.api.import_image_from_file(str(archive), repository=repo, tag=version,
                                          changes=['CMD ["/bin/bash"]', "ENV LANG=C.UTF-8"])
        log(f"imported {tag}")


def _build_base_from_registry(client, tag: str, log) -> None:
    official = BASE_RECIPE["official_image"]
    repo, version = official.split(":")
    client.images.pull(repo, tag=version)
    dockerfile = (f"FROM {official}\nRUN apt-get update && apt-get install -y --no-install-recommends "
                  f"{' '.join(BASE_RECIPE['packages'])} && rm -rf /var/lib/apt/lists/*\n")
    with tempfile.TemporaryDirectory(prefix="memgrid-base-") as tmp:
        Path(tmp, "Dockerfile").write_text(dockerfile)
        client.images.build(path=tmp, tag=tag, rm=True, forcerm=True)
    log(f"built {tag} from {official}")


def ensure_base(client, log=print) -> ImageRef:
    tag = base_tag()
    image = find_image(client, tag)
    if image is None:
        source = os.environ.get("MEMGRID_BASE_SOURCE", "auto")
        if source not in ("auto", "pull", "debootstrap"):
            raise EngineError(f"MEMGRID_BASE_SOURCE={source!r}: fix: use auto, pull or debootstrap")
        built = False
        if source in ("auto", "pull"):
            try:
                _build_base_from_registry(client, tag, log)
                built = True
            except docker.errors.APIError as e:
                if source == "pull":
                    raise EngineError(f"pulling {BASE_RECIPE['official_image']} failed ({e.explanation}): fix: use MEMGRID_BASE_SOURCE=debootstrap") from None
                log(f"no registry reachable ({BASE_RECIPE['official_image']}); building the base image offline")
        if not built:
            _build_base_debootstrap(client, tag, log)
        image = client.images.get(tag)
    return ImageRef("base", tag, image.id)


def ensure_derived(client, role: str, base: ImageRef, log=print) -> ImageRef:
    tag = derived_tag(role, base.id)
    image = find_image(client, tag)
    if image is None:
        log(f"building {tag}")
        try:
            image, _ = client.images.build(path=str(IMAGES_DIR / role), tag=tag, buildargs={"BASE": base.tag},
                                           rm=True, forcerm=True, labels={"memgrid.role": role})
        except docker.errors.BuildError as e:
            lines = [c.get("stream", c.get("error", "")).strip() for c in e.build_log if isinstance(c, dict)]
            raise EngineError(f"building {tag} failed: {' | '.join(l for l in lines if l)[-400:]}: fix: see images/{role}/Dockerfile") from None
    return ImageRef(role, tag, image.id)


def ensure_images(client, log=print) -> ImageSet:
    base = ensure_base(client, log)
    return ImageSet(base, *(ensure_derived(client, role, base, log) for role in DERIVED))


def existing_images(client) -> ImageSet | None:
    """The current image set if every image is already built; None otherwise (never builds)."""
    base = find_image(client, base_tag())
    if base is None:
        return None
    refs = {}
    for role in DERIVED:
        tag = derived_tag(role, base.id)
        image = find_image(client, tag)
        if image is None:
            return None
        refs[role] = ImageRef(role, tag, image.id)
    return ImageSet(ImageRef("base", base_tag(), base.id), refs["sandbox"], refs["checker"])
