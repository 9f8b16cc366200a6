"""Keep the host out of a cell's reach: the route table of a container on the cell's network.

A container on an internal network still has a default route to the network's gateway, which is
the host's own address on that bridge, and through it every other address of the host answers
(measured on Docker 20.10: the engine isolates internal networks from each other, not from the
host). So before anything of the agent's runs, a short-lived helper joins the container's network
namespace with NET_ADMIN (the container itself never has it) and removes the default route and
makes the gateway address `prohibit`. What is left is the cell's own subnet, whose other members
are the harness's sidecars. IPv6 is switched off when the container is created (sandbox.py). The
helper prints the resulting route table, the proof recorded in the cell's proof.json.
"""

import ipaddress
import json

import docker.errors
import requests

from runner.grading.gate import GateProof
from runner.env.containers import CELL_LABEL, ROLE_LABEL, RUN_LABEL, remove_quietly

GUARD_SECONDS = 30
# Runs as root with NET_ADMIN in the target's network namespace; prints one JSON line.
GUARD_SCRIPT = r"""
set -eu
gateways=$(ip -4 route show | awk '$1 == "default" {print $3}')
ip -4 route show | awk '$1 == "default"' | while read -r route; do ip -4 route del $route; done
for gw in $gateways; do ip -4 route add prohibit "$gw/32"; done
python3 -c '
import json, subprocess, sys
routes = subprocess.run(["ip", "-4", "route", "show"], capture_output=True, text=True).stdout.splitlines()
ipv6 = open("/proc/sys/net/ipv6/conf/all/disable_ipv6").read().strip()
print(json.dumps({"gateways": sys.argv[1].split(), "routes": routes, "ipv6_disabled": ipv6 == "1"}))
' "$gateways"
"""


class NetworkGuardError(RuntimeError):
    """The helper could not lock the container's routes: the cell must not run."""


def judge(report: dict, name: str = "host_unreachable") -> GateProof:
    """The route table proves the host unreachable: no default route, every former gateway
    prohibited, every other route on-link (a subnet of the cell's network), IPv6 off."""
    routes = report.get("routes", [])
    gateways = report.get("gateways", [])
    problems = [] if gateways else ["no default gateway was found to prohibit"]
    prohibited = {r.split()[1] for r in routes if r.split()[:1] == ["prohibit"] and len(r.split()) > 1}
    problems += [f"gateway {gw} is not prohibited" for gw in gateways if gw not in prohibited]
    for route in routes:
        words = route.split()
        if words[:1] == ["prohibit"]:
            words = words[1:]
        if "via" in words:  # a default route too: 'default via <gateway>'
            problems.append(f"route through a router: {route}")
            continue
        try:
            ipaddress.ip_network(words[0])
        except (ValueError, IndexError):
            problems.append(f"unexpected route: {route}")
    if not report.get("ipv6_disabled"):
        problems.append("IPv6 is on")
    passed = not problems
    detail = ("routes: " + "; ".join(routes)) if passed else "; ".join(problems) + " (routes: " + "; ".join(routes) + ")"
    return GateProof(name, passed, detail[:500])


def guard(client, container, image: str, *, run_id: str, cell_id: str, name: str = "host_unreachable") -> GateProof:
    """Lock `container`'s routes (it must be running). Raises NetworkGuardError if the helper fails;
    returns the proof read from the route table it leaves."""
    helper = client.containers.create(
        image, ["sh", "-c", GUARD_SCRIPT], user="0:0", network_mode=f"container:{container.id}",
        cap_drop=["ALL"], cap_add=["NET_ADMIN"], security_opt=["no-new-privileges"], detach=True,
        labels={RUN_LABEL: run_id, CELL_LABEL: cell_id, ROLE_LABEL: "netguard"}, mem_limit="64m", pids_limit=32)
    try:
        helper.start()
        try:
            status = helper.wait(timeout=GUARD_SECONDS)
        except (requests.exceptions.Timeout, requests.exceptions.ConnectionError):
            raise NetworkGuardError(f"the network guard did not finish within {GUARD_SECONDS}s") from None
        out = helper.logs(stdout=True, stderr=True).decode(errors="replace").strip()
    except docker.errors.APIError as e:
        raise NetworkGuardError(f"the network guard could not run: {e}") from None
    finally:
        remove_quietly(helper)
    if status.get("StatusCode") != 0:
        raise NetworkGuardError(f"the network guard exited {status.get('StatusCode')}: {out[-300:]}")
    try:
        report = json.loads(out.splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        raise NetworkGuardError(f"the network guard printed no report: {out[-300:]!r}") from None
    proof = judge(report, name)
    if not proof.passed:
        raise NetworkGuardError(f"the host is still reachable from {container.name}: {proof.detail}")
    return proof
