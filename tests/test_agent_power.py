"""A screen that went off while the model thought, and a lock screen: the agent wakes the phone
rather than handing a black frame over as a FLAG_SECURE screen, and hands a locked phone over
as such. The virtual phone asleep and locked, through the real adb server."""

from __future__ import annotations

from contextlib import AbstractContextManager

import pytest
from _adb import AdbServer, connected, requires_adb
from test_agent_llm import LoopbackModel, config as llm_config
from test_agent_loop import FAST, QUICK, notes_model

from agent.executor import AdbInput, Executor, input_for
from agent.llm import ChatModel
from agent.loop import Agent, StopReason, Transcript
from perception.engine import Engine
from perception.simdevice import Faults, SimDevice
from perception.sources.device import DeviceSource, PowerState, parse_power_state

AWAKE_14 = """POWER MANAGER (dumpsys power)

Power Manager State:
  mDirty=0x0
  mWakefulness=Awake
  mWakefulnessChanging=false
  mIsPowered=true
Display Power: state=ON
"""
KEYGUARD_11 = """WINDOW MANAGER POLICY STATE (dumpsys window policy)
    KeyguardServiceDelegate
      showing=%s
      showingAndNotOccluded=%s
      inputRestricted=%s
"""
POLICY_9 = "    mShowingLockscreen=%s mShowingDream=false mDreamingLockscreen=%s\n"


@pytest.mark.parametrize(
    ("power", "window", "state"),
    [
        (AWAKE_14, KEYGUARD_11.replace("%s", "false"), PowerState(awake=True, locked=False)),
        (AWAKE_14.replace("Awake", "Asleep").replace("state=ON", "state=OFF"),
         KEYGUARD_11.replace("%s", "true"), PowerState(awake=False, locked=True)),
        (AWAKE_14.replace("Awake", "Dozing"), "", PowerState(awake=False, locked=False)),
        (AWAKE_14.replace("state=ON", "state=OFF"), "", PowerState(awake=False, locked=False)),
        ("  mScreenOn=false\n", POLICY_9.replace("%s", "true"), PowerState(False, True)),
        ("  mScreenOn=true\n", POLICY_9.replace("%s", "false"), PowerState(True, False)),
        ("", "", PowerState(awake=True, locked=False)),  # a phone that says nothing
        (AWAKE_14, "      showingAndNotOccluded=true\n  mShowingDream=true\n",
         PowerState(awake=True, locked=True)),
        # an alarm or a call shown over the lock screen: usable
        (AWAKE_14, "      showing=true\n      showingAndNotOccluded=false\n      secure=true\n",
         PowerState(awake=True, locked=False, secure_lock=True)),
        (AWAKE_14, KEYGUARD_11.replace("%s", "true") + "      secure=false\n",
         PowerState(awake=True, locked=True, secure_lock=False)),
    ],
)
def test_power_state_of_every_era(power: str, window: str, state: PowerState) -> None:
    assert parse_power_state(power, window) == state


# ----- the agent on the virtual phone, asleep and locked -----------------------------------



def phone(
    adb_server: AdbServer, **faults: bool
) -> AbstractContextManager[tuple[SimDevice, DeviceSource]]:
    return connected(adb_server, faults=Faults(**faults))


def run_notes(source: DeviceSource) -> tuple[Transcript, LoopbackModel]:
    with LoopbackModel(notes_model) as server, Engine(source, config=FAST) as engine:
        model = ChatModel(llm_config(server))
        transcript = Agent(engine, model, Executor(input_for(source)), QUICK).run(
            "Create a note and find the dark mode setting"
        )
        model.close()
    return transcript, server


@requires_adb
def test_a_screen_that_went_off_is_woken_not_handed_over(adb_server: AdbServer) -> None:
    with phone(adb_server, asleep=True) as (sim, source):
        assert source.power_state() == PowerState(awake=False, locked=False, secure_lock=False)
        transcript, server = run_notes(source)
        first = transcript.steps[0]
        assert first.outcome == "the screen was off: woke it"
        assert first.commands == ("keyevent KEYCODE_WAKEUP",) and first.action is None
        assert transcript.stop is StopReason.FINISHED, transcript.dumps()
        assert source.power_state().awake
        assert any("screen turned on" in e for e in sim.phone.events)
        # the model was first asked on the woken screen, never on the black one
        assert len(server.requests) == len(transcript.steps) - 1


@requires_adb
def test_a_swipe_lock_is_opened_and_a_pin_handed_over(adb_server: AdbServer) -> None:
    """After waking: a lock screen that asks for nothing is opened (wm dismiss-keyguard) and
    the task goes on; one with a PIN is handed over as locked."""
    with phone(adb_server, asleep=True, locked=True) as (sim, source):
        transcript, _ = run_notes(source)
        woke, opened = transcript.steps[:2]
        assert woke.outcome == "the screen was off: woke it"
        assert opened.outcome == "the lock screen was up (no PIN): opened it"
        assert opened.commands == ("wm dismiss-keyguard",)
        assert transcript.stop is StopReason.FINISHED, transcript.dumps()
    with phone(adb_server, asleep=True, locked=True, pin=True) as (sim, source):
        transcript, server = run_notes(source)
        woke, handed = transcript.steps
        assert woke.outcome == "the screen was off: woke it"
        assert handed.outcome == "handed over: the phone is locked (a person must unlock it)"
        assert transcript.stop is StopReason.HAND_OVER and server.requests == []


class DeadPowerButton(AdbInput):
    """A phone whose wake key does nothing (the key is sent; the screen stays off)."""

    def wake(self) -> str:
        return self._send("keyevent", "KEYCODE_UNKNOWN")


@requires_adb
def test_a_screen_that_stays_off_ends_the_run(adb_server: AdbServer) -> None:
    """Two tries, then handed over: not the whole budget spent waking a phone that stays off."""
    with phone(adb_server, asleep=True) as (sim, source):
        with LoopbackModel(notes_model) as server, Engine(source, config=FAST) as engine:
            model = ChatModel(llm_config(server))
            transcript = Agent(engine, model, Executor(DeadPowerButton(source)), QUICK).run("t")
            model.close()
        outcomes = [s.outcome for s in transcript.steps]
        assert outcomes == ["the screen was off: woke it"] * 2 + [
            "the screen stays off after waking it"
        ]
        assert transcript.stop is StopReason.HAND_OVER and server.requests == []


@requires_adb
def test_a_phone_locked_from_the_start_is_handed_over_at_once(adb_server: AdbServer) -> None:
    """A lock screen is drawn (not black): the agent asks the phone at the first step."""
    with phone(adb_server, locked=True, pin=True) as (sim, source):
        transcript, server = run_notes(source)
        (handed,) = transcript.steps
        assert handed.outcome == "handed over: the phone is locked (a person must unlock it)"
        assert transcript.stop is StopReason.HAND_OVER and server.requests == []
        assert not any(e.startswith("tap") for e in sim.phone.events)
