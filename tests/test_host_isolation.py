"""The host is out of a claude-code cell's reach: a listener on every address of this host, and
connections from the guarded sandbox and the scripted model container to each of them.

A control container on the same cell network, left unguarded, must connect: it proves the probe
and the listener can see a connection, so the guarded ones' failures are the guard's doing.
Only this host's own addresses and the cell's own containers are contacted.
"""

import pytest

from runner.env import netguard

from runner.env import probes

from runner.env import selftest


@pytest.fixture
def listener():
    server = probes.HostListener()
    yield server
    server.close()


def test_no_host_address_answers_the_sandbox_or_the_model(engine, images, run_id, listener, no_leftovers):
    from runner.env.images import ensure_derived

    model_image = ensure_derived(engine, "model", images.base, log=lambda m: None)
    with selftest.probe_cell(engine, images, model_image.tag, run_id) as (endpoint, guarded, control, proof):
        assert proof.passed and "prohibit" in proof.detail
        assert endpoint.guard_proof is not None and endpoint.guard_proof.passed
        hosts = probes.host_targets(listener.port)
        assert len(hosts) >= 3, hosts  # loopback, the main interface, the bridges

        # The control proves the probe sees a connection: an unguarded cell container reaches the host.
        seen = probes.parse(control.exec(probes.command("tcp", targets=hosts, timeout=2), timeout=120).stdout)
        assert any(v == "connected" for v in seen.values()), f"the control could not reach the host: {seen}"
        peers_from_control = listener.settled(at_least=sum(v == "connected" for v in seen.values()))
        assert peers_from_control > 0

        from_sandbox = probes.parse(guarded.exec(probes.command("tcp", targets=hosts, timeout=2), timeout=120).stdout)
        model = endpoint.containers["model"]
        code, out = model.exec_run(probes.command("tcp", targets=hosts, timeout=2))
        from_model = probes.parse(out.decode())
        assert not [t for t, v in from_sandbox.items() if v == "connected"], from_sandbox
        assert not [t for t, v in from_model.items() if v == "connected"], from_model
        assert listener.settled() == peers_from_control, "the host accepted a connection from a guarded container"

        # The cell still works: the gateway answers the sandbox on the cell network.
        gateway = probes.parse(guarded.exec(probes.command("tcp", targets=["gateway:8080"]), timeout=30).stdout)
        assert gateway == {"gateway:8080": "connected"}
        seen_routes = probes.parse(guarded.exec(probes.command("routes"), timeout=30).stdout)
        assert not [r for r in seen_routes["routes"] if r["destination"] == "0.0.0.0"], seen_routes
        assert not seen_routes["ipv6_enabled"]


def test_the_guard_refuses_a_route_table_that_leaves_the_host_reachable():
    kept_default = {"gateways": ["172.30.0.1"], "ipv6_disabled": True,
                    "routes": ["default via 172.30.0.1 dev eth0", "172.30.0.0/16 dev eth0 proto kernel scope link"]}
    assert not netguard.judge(kept_default).passed
    not_prohibited = {"gateways": ["172.30.0.1"], "ipv6_disabled": True,
                      "routes": ["172.30.0.0/16 dev eth0 proto kernel scope link"]}
    assert "not prohibited" in netguard.judge(not_prohibited).detail
    ipv6_on = {"gateways": ["172.30.0.1"], "ipv6_disabled": False,
               "routes": ["prohibit 172.30.0.1", "172.30.0.0/16 dev eth0 proto kernel scope link"]}
    assert not netguard.judge(ipv6_on).passed
    locked = {**ipv6_on, "ipv6_disabled": True}
    assert netguard.judge(locked).passed


def test_the_listener_counts_a_connection_only_once_a_thread_has_accepted_it(listener):
    """A connection the kernel completed shows in `peers` only when an accept thread takes it, later on a loaded
    host: `settled` waits for the count to catch up (here a peer recorded 0.3 s after it is asked for), where reading
    `peers` at once saw none, and the control's connections were then counted against the guarded probe."""
    import threading

    threading.Timer(0.3, lambda: listener.peers.append("192.0.2.7")).start()
    assert len(listener.peers) == 0
    assert listener.settled(at_least=1) == 1
    threading.Timer(0.2, lambda: listener.peers.append("192.0.2.8")).start()
    assert listener.settled() == 2  # a late one after the count was reached is still waited for (quiet period)
