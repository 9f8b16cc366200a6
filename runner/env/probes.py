"""Escape probes: what a hostile agent would try from inside a cell, as one stdlib Python program.

The program runs inside a real container (as the agent, or as the scripted model server's user)
and prints one JSON object per probe. It contacts only what it is given: addresses of this host and
the cell's own sidecars, never anything outside. Tests and `memgrid selftest` judge its output.
"""

import json
import re
import socket
import threading
import time

PROBE_PROGRAM = r'''
import errno, json, os, socket, sys, http.client

def tcp(targets, timeout):
    """Try a TCP connection to each host:port; report connected or the error."""
    out = {}
    for target in targets:
        host, _, port = target.rpartition(":")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
                out[target] = "connected"
        except OSError as e:
            out[target] = f"{type(e).__name__}: {e.strerror or e}"
    return out

def routes():
    """The IPv4 route table and resolver as the cell sees them (no tool needed: /proc and /etc)."""
    table = []
    with open("/proc/net/route") as f:
        for line in f.read().splitlines()[1:]:
            iface, dest, gateway, flags = line.split()[:4]
            table.append({"iface": iface, "destination": socket.inet_ntoa(bytes.fromhex(dest)[::-1]),
                          "gateway": socket.inet_ntoa(bytes.fromhex(gateway)[::-1]), "flags": int(flags, 16)})
    try:
        resolv = [l.split()[1] for l in open("/etc/resolv.conf") if l.startswith("nameserver")]
    except OSError:
        resolv = []
    try:
        ipv6 = open("/proc/sys/net/ipv6/conf/all/disable_ipv6").read().strip() == "0"
    except OSError:
        ipv6 = False
    return {"routes": table, "nameservers": resolv, "ipv6_enabled": ipv6}

def fill(path, limit):
    """Write zeros into `path` until the disk says no (or `limit` bytes); report how far it got."""
    written, error = 0, None
    block = b"\0" * (1 << 20)
    try:
        with open(path, "wb") as f:
            while written < limit:
                f.write(block)
                f.flush()
                written += len(block)
            os.fsync(f.fileno())
    except OSError as e:
        error = errno.errorcode.get(e.errno, str(e.errno))
    try:
        os.remove(path)
    except OSError:
        pass
    return {"path": path, "written": written, "error": error}

def http_status(host, port, method, path, timeout):
    try:
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
        conn.request(method, path, body=b"{}" if method == "POST" else None,
                     headers={"content-type": "application/json", "x-api-key": "sk-memgrid-placeholder"})
        return conn.getresponse().status
    except OSError as e:
        return f"{type(e).__name__}: {e}"

def flood(nbytes):
    line = b"y" * 1023 + b"\n"
    out = sys.stdout.buffer
    for _ in range(nbytes // 1024):
        out.write(line)
    out.flush()
    return {"flooded": nbytes}

probe = json.loads(sys.argv[1])
kind = probe.pop("kind")
result = {"tcp": lambda: tcp(probe["targets"], probe.get("timeout", 2)), "routes": routes,
          "fill": lambda: fill(probe["path"], probe["limit"]),
          "http": lambda: {p: http_status(probe["host"], probe["port"], m, p, probe.get("timeout", 5))
                           for m, p in probe["requests"]},
          "flood": lambda: flood(probe["bytes"])}[kind]()
print(json.dumps({"probe": kind, "result": result}), flush=True)
'''


def command(kind: str, **args) -> list[str]:
    """The probe as a command line for a container that has python3."""
    return ["python3", "-I", "-c", PROBE_PROGRAM, json.dumps({"kind": kind, **args})]


def parse(stdout: str) -> dict:
    """The probe's result (its last JSON line)."""
    for line in reversed(stdout.strip().splitlines()):
        try:
            report = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(report, dict) and "probe" in report:
            return report["result"]
    raise ValueError(f"the probe printed no report: {stdout[-300:]!r}")


def host_addresses() -> list[str]:
    """Every address of this host, IPv4 and IPv6 (link-local ones with their interface), as `ip`
    lists them: the bridges' (every cell network's gateway among them) and the main interface's."""
    import subprocess

    out = subprocess.run(["ip", "-j", "addr"], capture_output=True, text=True, timeout=10, check=True).stdout
    addresses = []
    for iface in json.loads(out):
        for addr in iface.get("addr_info", []):
            local = addr["local"]
            if addr["family"] == "inet6":
                local = f"[{local}%{iface['ifname']}]" if addr.get("scope") == "link" else f"[{local}]"
            addresses.append(local)
    return addresses


class HostListener:
    """Accepts TCP on every IPv4 and IPv6 address of this host at one port and counts the peers."""

    def __init__(self):
        self.sockets = [socket.create_server(("0.0.0.0", 0))]
        self.port = self.sockets[0].getsockname()[1]
        try:
            v6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
            v6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            v6.bind(("::", self.port))
            v6.listen()
            self.sockets.append(v6)
        except OSError:
            pass  # a host without IPv6
        self.peers: list[str] = []
        self.closed = False
        for sock in self.sockets:
            sock.settimeout(0.2)
            threading.Thread(target=self._accept, args=(sock,), daemon=True).start()

    def _accept(self, sock):
        while not self.closed:
            try:
                conn, peer = sock.accept()
            except OSError:
                continue
            self.peers.append(peer[0])
            conn.close()

    def settled(self, at_least: int = 0, quiet: float = 0.5, seconds: float = 10.0) -> int:
        """The peers counted once the accept threads have caught up: at least `at_least` of them and none new for
        `quiet` seconds (at most `seconds` in all). A connection the kernel completed is counted only when a thread
        accepts it, which on a loaded host comes later: read at once, a control's connections were counted after
        the guarded probe's and failed it ("host accepted 3"), and a guarded one could be missed."""
        deadline = time.monotonic() + seconds
        count, since = len(self.peers), time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(0.05)
            if len(self.peers) != count:
                count, since = len(self.peers), time.monotonic()
            elif count >= at_least and time.monotonic() - since >= quiet:
                break
        return len(self.peers)

    def close(self):
        self.closed = True
        for sock in self.sockets:
            sock.close()


def host_targets(port: int) -> list[str]:
    """host:port for every address of this host, as a probe inside a cell names them."""
    # A link-local address names the host's interface; inside the container the link is eth0.
    return [f"{re.sub(r'%[^]]+', '%eth0', a)}:{port}" for a in host_addresses()]
