"""The protocols a grid can run, by the name its spec's `protocol` field gives (default: coding)."""

from runner.errors import SpecError
from runner.protocols.base import Protocol
from runner.protocols.coding import CodingProtocol
from runner.protocols.personal.protocol import PersonalProtocol
from runner.protocols.planted.protocol import PlantedProtocol
from runner.protocols.two_session.protocol import TwoSessionProtocol

PROTOCOLS: dict[str, Protocol] = {p.name: p for p in (CodingProtocol(), TwoSessionProtocol(), PlantedProtocol(),
                                                       PersonalProtocol())}
DEFAULT = "coding"


def protocol_named(name: str, where="--protocol") -> Protocol:
    if name not in PROTOCOLS:
        raise SpecError(where, "protocol", f"'{name}' is not a protocol memgrid runs",
                        f"use one of: {', '.join(PROTOCOLS)} (memgrid protocol list)")
    return PROTOCOLS[name]

