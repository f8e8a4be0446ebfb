"""Android's "isn't responding" dialog over the app: the observation offers its Wait (not its
Close app, which would end the app and the task), and an agent that follows the operation
gets its app back. The virtual phone shows the dialog (in the dump and drawn in the frames),
through the real adb server; the real openai client talks to a loopback server."""

from __future__ import annotations

import json
from typing import Any

from _adb import AdbServer, connected, requires_adb
from test_agent_llm import LoopbackModel, config as llm_config
from test_agent_loop import FAST, QUICK

from agent.executor import Executor, input_for
from agent.llm import ChatModel
from agent.loop import Agent, StopReason
from perception.engine import Engine
from perception.simdevice import Faults


def follow_ops(body: dict[str, Any]) -> str:
    """Take the operation the screen offers; finish when there is none."""
    screen = json.loads(body["messages"][-1]["content"])["screen"]
    ops = [op for op in screen.get("ops", []) if len(op) == 2]
    if ops:
        return json.dumps({"action": "tap", "id": ops[0][1]})
    return '{"action":"finish","answer":"the app answers"}'


@requires_adb
def test_the_agent_waits_out_an_app_that_is_not_responding(adb_server: AdbServer) -> None:
    with connected(adb_server, faults=Faults(anr=True)) as (sim, source):
        with Engine(source, config=FAST) as engine:
            first = engine.observe()
            wait = next(c for c in first.candidates if c.text == "Wait")
            assert [(o.kind.value, o.candidate_id) for o in first.operations] == [
                ("accept", wait.id)
            ]
            assert first.state.value == "tree" and first.consistent is not False
            with LoopbackModel(follow_ops) as server:
                model = ChatModel(llm_config(server))
                transcript = Agent(engine, model, Executor(input_for(source), sleep=False),
                                   QUICK).run("Use the app")
                model.close()
        assert transcript.stop is StopReason.FINISHED, transcript.steps
        assert not sim.faults.anr
        assert any(e.endswith("(not responding: wait)") for e in sim.phone.events), sim.phone.events
        assert "Close app" not in json.dumps(server.requests[-1]["messages"][-1]["content"])


@requires_adb
def test_the_dialog_takes_every_other_input(adb_server: AdbServer) -> None:
    with connected(adb_server, faults=Faults(anr=True)) as (sim, source):
        source.input("keyevent", "KEYCODE_BACK")
        box = sim.phone.anr_buttons()["dialog"]
        source.input("tap", box.left + 5, box.top - 50)  # the app's screen, under the dim
        events = sim.phone.events[-2:]
        assert all(e.endswith("(ignored (dialog))") for e in events), events
        close = sim.phone.anr_buttons()["close"].center
        source.input("tap", close.x, close.y)
        assert sim.phone.events[-1].endswith("(not responding: close)")
        assert not sim.faults.anr and sim.phone.navigator.position == 0
