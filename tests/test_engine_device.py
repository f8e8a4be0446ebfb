"""The Engine on the virtual phone through the real adb server: observations, actions, faults."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from test_simdevice import TINY, AdbServer, _config, adb_server, requires_adb  # noqa: F401

from perception.config import EngineConfig
from perception.engine import Engine
from perception.errors import DeviceError
from perception.pipeline import Perceiver
from perception.simdevice import SimDevice
from perception.sources.device import DeviceSource

CFG = EngineConfig(frame_interval_ms=50, tree_interval_ms=50, observe_timeout_s=15.0)


@pytest.fixture
def phone(adb_server: AdbServer) -> Iterator[tuple[SimDevice, DeviceSource]]:  # noqa: F811
    sim = SimDevice(TINY).start()
    try:
        adb_server.connect(sim)
        source = DeviceSource(sim.serial, config=_config(adb_server))
        source.wait_ready()
        yield sim, source
    finally:
        adb_server.adb("disconnect", sim.serial)
        sim.stop()


def _texts(obs: object) -> set[str]:
    return {c.text for c in getattr(obs, "candidates", ())}


@requires_adb
def test_engine_on_the_virtual_phone(phone: tuple[SimDevice, DeviceSource]) -> None:
    sim, source = phone
    with Engine(source, perceiver=Perceiver(), config=CFG) as engine:
        obs = engine.observe()
        assert "New note" in _texts(obs) and obs.state.value == "tree"
        assert obs.screen is not None and obs.screen.size.width_px == 360
        source.input("tap", 40, 120)  # the recorded "New note" target
        obs = engine.observe(after_action=True)
        assert "Save" in _texts(obs) and "New note" not in _texts(obs)
    assert not [t for t in threading.enumerate() if t.name.startswith("perception-")]


@requires_adb
def test_engine_falls_back_to_pixels_on_idle_state(
    phone: tuple[SimDevice, DeviceSource],
) -> None:
    sim, source = phone
    sim.faults.apply("idle", "always")
    with Engine(source, perceiver=Perceiver(), config=CFG) as engine:
        obs = engine.observe()
        assert obs.pairing.value == "frame_only"
        assert obs.tree_confidence == 0.0
        assert engine.stats().tree_errors >= 1
        sim.faults.apply("idle", "0")  # the tree comes back
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            obs = engine.observe()
            if obs.pairing.value == "paired":
                break
        assert obs.pairing.value == "paired" and "New note" in _texts(obs)


@requires_adb
def test_engine_raises_when_the_phone_is_gone(phone: tuple[SimDevice, DeviceSource]) -> None:
    sim, source = phone
    with Engine(source, perceiver=Perceiver(), config=CFG) as engine:
        engine.observe()
        sim.stop()  # the phone disappears mid-session
        t0 = time.monotonic()
        with pytest.raises(DeviceError) as info:
            for _ in range(50):
                engine.observe(timeout_s=5.0)
        assert info.value.serial == sim.serial
        assert time.monotonic() - t0 < 8.0


@requires_adb
def test_engine_slow_phone_times_out_not_hangs(
    adb_server: AdbServer,  # noqa: F811
    phone: tuple[SimDevice, DeviceSource],
) -> None:
    sim, _ = phone
    source = DeviceSource(sim.serial, config=_config(adb_server, dump_timeout_s=0.4,
                                                       frame_timeout_s=0.4))
    sim.faults.apply("slow_ms", "800")
    with Engine(source, perceiver=Perceiver(), config=CFG) as engine:
        t0 = time.monotonic()
        with pytest.raises(DeviceError):
            engine.observe(timeout_s=4.0)
        assert time.monotonic() - t0 < 5.0
        sim.faults.apply("slow_ms", "0")
        obs = engine.observe(timeout_s=10.0)
        assert "New note" in _texts(obs)
