"""An agent CLI pinned on the npm registry: its platform package at one version, fetched on the host, checked
against the checksums the registry published for it, and unpacked into the agent's image build context.

Every CLI agent (claude-code, codex) keeps its pin in images/<agent>/pin.yaml; the files it takes out of the
tarball are not committed, and a stamp beside them names the pin they came from, so they are fetched again
only when the pin changes.
"""

import base64
import hashlib
import io
import json
import tarfile
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from runner.errors import EngineError, SpecError
from runner.plan.spec import read_yaml

PIN_FIELDS = ("package", "version", "tarball", "integrity", "shasum")
STAMP = ".memgrid-pin.json"


@dataclass(frozen=True)
class NpmPin:
    package: str
    version: str
    tarball: str
    integrity: str  # sha512-<base64>, as the registry publishes it
    shasum: str  # sha1 hex, as the registry publishes it

    def as_dict(self) -> dict:
        return {"package": self.package, "version": self.version, "integrity": self.integrity, "shasum": self.shasum}


def load_pin(context: Path) -> NpmPin:
    path = context / "pin.yaml"
    data = read_yaml(path)
    wrong = sorted(set(PIN_FIELDS) ^ set(data)) or [k for k in PIN_FIELDS if not isinstance(data[k], str)]
    if wrong:
        raise SpecError(path, wrong[0], "is missing, unknown or not text",
                        f"give exactly {', '.join(PIN_FIELDS)}, each as text, as the npm registry publishes them")
    return NpmPin(**data)


def verify_tarball(data: bytes, pin: NpmPin, pin_path: Path) -> None:
    algo, _, expected = pin.integrity.partition("-")
    seen = base64.b64encode(hashlib.new(algo, data).digest()).decode()
    if seen != expected or hashlib.sha1(data).hexdigest() != pin.shasum:
        raise EngineError(f"{pin.tarball}: checksum mismatch ({algo} {seen[:16]}... != pinned {expected[:16]}...): "
                          f"fix: the download is corrupt or the pin is wrong; re-run, or correct {pin_path}")


def fetch_files(pin: NpmPin, context: Path, members: dict[str, str], log=print) -> None:
    """The pinned tarball's `members` (path in the tarball -> file name in `context`), verified and executable;
    fetched only when one is missing or came from another pin."""
    stamp = context / STAMP
    if all((context / name).is_file() for name in members.values()) and stamp.is_file() \
            and json.loads(stamp.read_text()) == pin.as_dict():
        return
    log(f"fetching {pin.package}@{pin.version} from the npm registry")
    started = time.monotonic()
    try:
        with urllib.request.urlopen(pin.tarball, timeout=300) as response:
            data = response.read()
    except OSError as e:
        raise EngineError(f"{pin.tarball}: download failed ({e}): fix: this needs the npm registry "
                          "(set HTTPS_PROXY if one is required)") from None
    verify_tarball(data, pin, context / "pin.yaml")
    stamp.unlink(missing_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member, name in members.items():
            with tempfile.NamedTemporaryFile(dir=context, delete=False) as tmp:
                tmp.write(tar.extractfile(tar.getmember(member)).read())
            Path(tmp.name).chmod(0o755)
            Path(tmp.name).replace(context / name)
    stamp.write_text(json.dumps(pin.as_dict(), indent=1, sort_keys=True) + "\n")
    log(f"verified {len(data) / 2**20:.0f} MiB tarball ({pin.integrity[:20]}...) in {time.monotonic() - started:.1f} s")
