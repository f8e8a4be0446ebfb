"""Review 18: the answer scanner never runs an action found inside a broken one, refuses a key
given twice and an answer past its scan limit; ``finish`` says whether the task was done."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent import actions
from agent.actions import (
    _MAX_SCAN_STARTS,
    MAX_MODEL_TEXT_CHARS,
    ActionSchemaError,
    ActionSyntaxError,
    Finish,
    Tap,
    extract_json_object,
    parse_action,
)
from perception import perceive
from perception.demo import demo_png, demo_xml
from perception.pipeline import Observation


@pytest.fixture(scope="module")
def demo() -> Observation:
    return perceive(demo_xml(), demo_png())


def tappable(obs: Observation) -> tuple[int, int]:
    """Two ids of the demo screen that take a tap."""
    ids = [c.id for c in obs.candidates if c.shown and c.actionable and not c.disabled]
    return ids[0], ids[1]


# ----- an object inside a broken one is not the action ---------------------------------------


def test_an_object_inside_a_broken_object_is_ambiguous(demo: Observation) -> None:
    a, b = tappable(demo)
    for answer in (
        # the outer object lacks its last brace: its nested plan-B is not the action
        f'{{"action":"tap","id":{a},"if_fails":{{"action":"tap","id":{b}}}',
        f'```json\n{{"action":"tap","id":{a},"if_fails":{{"action":"tap","id":{b}}}\n```',
        f'Tapping.\n{{"action":"tap","id":{a},"plan":[{{"action":"tap","id":{b}}}] oops}}',
        # single quotes or bare keys: meant as an object all the same
        f"{{'action':'tap','id':{a},'next':{{\"action\":\"tap\",\"id\":{b}}}}}",
        f'{{action: "tap", id: {a}, next: {{"action":"tap","id":{b}}}}}',
        # a brace inside a string of the broken object does not end it early
        f'{{"action":"tap","id":{a},"reason":"a }} b" "x":{{"action":"tap","id":{b}}}}}',
    ):
        with pytest.raises(ActionSyntaxError, match="inside another that is not valid JSON"):
            parse_action(answer, demo)


def test_a_broken_object_before_a_valid_one_still_parses(demo: Observation) -> None:
    """A broken object that closes before the valid one is not around it: as before."""
    a, _ = tappable(demo)
    answer = f'I first wrote {{"action": "tap" "id": 3}}, wrong. Now: {{"action":"tap","id":{a}}}'
    assert parse_action(answer, demo) == Tap(a)
    # braces of prose (no key after them) are not objects, closed or not
    for prose in ("Options {a} or {b}. ", "Press { then } ", "Hmm {{ "):
        assert parse_action(prose + f'{{"action":"tap","id":{a}}}', demo) == Tap(a)


# ----- trailing commas: forgiven only where the whole answer is that object -----------------


def test_a_trailing_comma_is_forgiven_in_a_whole_answer_object(demo: Observation) -> None:
    a, _ = tappable(demo)
    for answer in (
        f'{{"action":"tap","id":{a},}}',
        f'  {{"action":"tap","id":{a}, "reason":"open it",\n}}\n',
        f'```json\n{{"action":"tap","id":{a},}}\n```',
        f'```\n{{"action":"tap","id":{a},}}\n```',
    ):
        assert parse_action(answer, demo) == Tap(a), answer
    swipe = '{"action":"swipe","from":[500,800,],"to":[500,200],}'
    assert parse_action(swipe, demo).to_json()["from"] == [500, 800]
    # a comma inside a string stays: the text is the model's
    assert parse_action('{"action":"finish","answer":"a,}",}', demo) == Finish("a,}")


def test_a_trailing_comma_with_anything_around_is_still_refused(demo: Observation) -> None:
    a, b = tappable(demo)
    with pytest.raises(ActionSyntaxError, match="no valid JSON"):
        parse_action(f'Here: {{"action":"tap","id":{a},}}', demo)
    # the reviewer's case: the whole object, nested plan and all, is the action; plan is no field
    with pytest.raises(ActionSchemaError, match="unexpected field.*'plan'"):
        parse_action(f'{{"action":"tap","id":{a},"plan":[{{"action":"tap","id":{b}}}],}}', demo)
    # forgiving commas never turns two objects into one answer
    with pytest.raises(ActionSyntaxError, match="no valid JSON"):
        parse_action(f'{{"action":"tap","id":{a},}} {{"action":"tap","id":{b},}}', demo)


# ----- duplicate keys ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        '{{"action":"tap","id":{b},"id":{a}}}',
        '```json\n{{"action":"tap","id":{b},"id":{a}}}\n```',
        'Sure: {{"action":"tap","id":{b},"id":{a}}}',
        '{{"action":"tap","action":"long_press","id":{a}}}',
        '{{"action":"tap","id":{a},"reason":"x","reason":"y",}}',
    ],
)
def test_a_key_given_twice_is_refused(demo: Observation, template: str) -> None:
    a, b = tappable(demo)
    with pytest.raises(ActionSyntaxError, match="gives the key '(id|action|reason)' twice"):
        parse_action(template.format(a=a, b=b), demo)


# ----- the scan limit -----------------------------------------------------------------------


def test_past_the_scan_limit_the_answer_is_refused(demo: Observation) -> None:
    a, b = tappable(demo)
    stray = "{" * (_MAX_SCAN_STARTS - 1)
    # the reviewer's case: the second, different action lay past the limit and went unseen
    with pytest.raises(ActionSyntaxError, match=f"more than {_MAX_SCAN_STARTS}"):
        parse_action(
            stray + f' {{"action":"tap","id":{a}}} no, wait: {{"action":"tap","id":{b}}}', demo
        )
    # within the limit, as before
    assert parse_action(stray + f' {{"action":"tap","id":{a}}}', demo) == Tap(a)
    # braces inside a parsed object are not scanned starts
    nested = json.dumps({"action": "finish", "answer": "{" * 200})
    assert parse_action("Done. " + nested, demo) == Finish("{" * 200)


def test_answers_that_parsed_before_parse_the_same(demo: Observation) -> None:
    """Unambiguous answers of every shape the scanner met before keep their object."""
    obj = {"action": "tap", "id": 7}
    for text in (
        '{"action": "tap", "id": 7}',
        '```json\n{"action": "tap", "id": 7}\n```',
        'I will tap it.\n{"action": "tap", "id": 7, "reason": "open it"}\nDone.',
        '{"action":"tap","id":7} {"action":"tap","id":7}',
        '[{"action": "tap", "id": 7}]',
        '<think>{"action":"key","key":"back"}</think>{"action":"tap","id":7}',
        'Options {a} or {b}.\n```json\n{"action":"tap","id":7}\n```',
    ):
        got = extract_json_object(text)
        assert {k: got[k] for k in obj} == obj, text


# ----- finish says whether the task was done -----------------------------------------------


def test_finish_carries_done(demo: Observation) -> None:
    assert parse_action('{"action":"finish","answer":"Connected"}', demo) == Finish("Connected")
    assert parse_action('{"action":"finish","answer":"ok","done":true}', demo) == Finish("ok")
    gave_up = parse_action(
        '{"action":"finish","answer":"No network named Cafe here","done":false}', demo
    )
    assert gave_up == Finish("No network named Cafe here", done=False)
    assert gave_up.done is False
    # to_json names done only when false; both read back the same
    assert Finish("ok").to_json() == {"action": "finish", "answer": "ok"}
    assert gave_up.to_json()["done"] is False
    for action in (Finish("ok"), gave_up):
        assert parse_action(json.dumps(action.to_json()), demo) == action


@pytest.mark.parametrize("value", ['"false"', "0", "1", "null", "[]", '"no"'])
def test_finish_done_must_be_a_boolean(demo: Observation, value: str) -> None:
    with pytest.raises(ActionSchemaError, match='"done" must be true or false'):
        parse_action(f'{{"action":"finish","answer":"x","done":{value}}}', demo)


def test_done_belongs_to_finish_only(demo: Observation) -> None:
    a, _ = tappable(demo)
    with pytest.raises(ActionSchemaError, match="unexpected field.*'done'"):
        parse_action(f'{{"action":"tap","id":{a},"done":false}}', demo)


def test_the_system_prompt_states_done_in_the_finish_line() -> None:
    from agent.prompt import system_prompt

    for coords in (True, False):
        lines = system_prompt("t", coords=coords).splitlines()
        (finish,) = [line for line in lines if line.startswith('{"action":"finish"')]
        assert '"done":true}' in finish and "false if it cannot be done" in finish


def test_the_cli_exits_5_when_the_model_gives_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The real CLI, the real openai client against the loopback server, a recorded screen."""
    from test_agent_cli import args
    from test_agent_llm import LoopbackModel
    from test_agent_loop import TINY

    from agent.cli import main

    monkeypatch.setenv("PERCEPTION_ENGINE_TREE_INTERVAL_MS", "20")
    monkeypatch.setenv("PERCEPTION_ENGINE_FRAME_INTERVAL_MS", "20")
    out = tmp_path / "t.json"
    answer = '{"action":"finish","answer":"This phone has no dark mode setting","done":false}'
    with LoopbackModel([answer]) as server:
        code = main(["--replay", str(TINY), *args(server, "--transcript", str(out))])
    assert code == 5, capsys.readouterr().err
    transcript = json.loads(out.read_text())
    assert transcript["stop"] == "gave_up"
    assert transcript["answer"] == "This phone has no dark mode setting"
    with LoopbackModel(['{"action":"finish","answer":"Done","done":true}']) as server:
        assert main(["--replay", str(TINY), *args(server)]) == 0


# ----- review of 8924124: trailing-comma objects count, prose braces do not swallow ----------


def test_a_second_action_with_a_trailing_comma_is_ambiguous(demo: Observation) -> None:
    """An object that is JSON once its trailing commas go is not the action, but beside a
    different one it is a second action: the answer is refused, in either order or fence."""
    a, b = tappable(demo)
    for answer in (
        f'{{"action":"tap","id":{a}}}\nIf that fails: {{"action":"tap","id":{b},}}',
        f'If that fails: {{"action":"tap","id":{b},}} Else {{"action":"tap","id":{a}}}',
        f'```json\n{{"action":"tap","id":{a}}}\n```\n```json\n{{"action":"key","key":"back",}}\n```',
        f'{{"action":"tap","id":{a}}} or {{"action":"swipe","from":[1,2,],"to":[3,4]}}',
    ):
        with pytest.raises(ActionSyntaxError, match="2 different JSON objects"):
            parse_action(answer, demo)
    # the same action again, with a trailing comma, is one action
    again = f'{{"action":"tap","id":{a}}}\nI mean {{"action":"tap","id":{a},}}'
    assert parse_action(again, demo) == Tap(a)
    # alone beside prose it is still no valid JSON (not run), as before
    with pytest.raises(ActionSyntaxError, match="no valid JSON"):
        parse_action(f'I will tap: {{"action":"tap","id":{a},}}', demo)


def test_a_brace_of_prose_that_never_closes_hides_no_action(demo: Observation) -> None:
    """A '{' of prose (or an abandoned object) that never closes is not around the action after
    it: the action is found, as before 8924124."""
    a, _ = tappable(demo)
    action = f'{{"action":"tap","id":{a}}}'
    for prose in (
        "The field reads {name: so I tap Save.\n",
        'Tap the {"Save" button.\n',
        "Use {x: y} or {z: ",
        # a self-correction after an object left unclosed
        f'{{"action":"tap","id":{a}\nsorry: ',
        '{"action": "tap" "id": 3\nNo, this: ',
    ):
        assert parse_action(prose + action, demo) == Tap(a), prose


def test_an_object_cut_short_still_holds_what_follows(demo: Observation) -> None:
    """Closing what it left open makes it valid JSON: its nested object is its plan-B, refused
    as before, wherever the answer ends (prose, a fence, a trailing comma, a list, a number)."""
    a, b = tappable(demo)
    inner = f'{{"action":"tap","id":{b}}}'
    for answer in (
        f'{{"action":"tap","id":{a},"if_fails":{inner}\nThis taps it.',
        f'Ok:\n{{"action":"tap","id":{a},"plan":[{inner}]\n```',
        f'{{"action":"tap","id":{a},"if_fails":{inner},',
        f'{{"action":"tap","id":{a},"if_fails":{inner},"n":5\nDone.',
        f'{{\n  "action": "tap",\n  "id": {a},\n  "if_fails": {inner}',
    ):
        with pytest.raises(ActionSyntaxError, match="inside another that is not valid JSON"):
            parse_action(answer, demo)


def test_an_empty_object_is_no_action(demo: Observation) -> None:
    a, _ = tappable(demo)
    action = f'{{"action":"tap","id":{a}}}'
    assert parse_action("{}" * 10 + action, demo) == Tap(a)
    assert parse_action(f"{action} then {{}} and {{ }}", demo) == Tap(a)
    assert parse_action(f'{{"action": "tap" "id": {{}}}} {action}', demo) == Tap(a)
    # nothing but empty objects: the object is there, and lacks its action
    with pytest.raises(ActionSchemaError, match='no "action"'):
        parse_action("Nothing to do {}", demo)
    # past the scan's limit the answer is refused, empty objects or not
    with pytest.raises(ActionSyntaxError, match=f"more than {_MAX_SCAN_STARTS}"):
        parse_action("{}" * 70 + action, demo)


def test_a_key_given_twice_with_the_same_value_is_one_key(demo: Observation) -> None:
    """The same value twice has one meaning (as an object repeated whole does); a different
    one, even one Python finds equal (1, 1.0, true), is refused."""
    a, _ = tappable(demo)
    for answer in (
        f'{{"action":"tap","id":{a},"id":{a}}}',
        f'Sure: {{"action":"tap","action":"tap","id":{a}}}',
        f'{{"action":"tap","id":{a},"reason":"x","reason":"x",}}',
    ):
        assert parse_action(answer, demo) == Tap(a), answer
    nested = '{"boxes":[{"box":[1,2,3,4]}],"boxes":[{"box":[1,2,3,4]}]}'
    assert extract_json_object(nested) == {"boxes": [{"box": [1, 2, 3, 4]}]}
    for answer in (
        '{"action":"tap","id":1,"id":1.0}',
        '{"action":"tap","id":1,"id":true}',
        '{"action":"tap","id":1,"reason":{"a":1,"b":2},"reason":{"a":1,"b":3}}',
    ):
        with pytest.raises(ActionSyntaxError, match="twice, with different values"):
            extract_json_object(answer)
    # objects that differ only in what Python calls equal are two different objects
    with pytest.raises(ActionSyntaxError, match="2 different"):
        extract_json_object('{"action":"tap","id":1} {"action":"tap","id":true}')
    assert extract_json_object('{"action":"tap","id":5} {"id":5,"action":"tap"}')["id"] == 5


def test_many_unclosed_starts_are_read_in_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """64 '{' that never close over 20,000 characters: each was walked to the end (over a
    second); one reading of the nesting serves them all (counted, not timed: timings belong
    to perception-bench)."""
    made: list[str] = []
    real = actions._Nesting.__init__

    def counted(self: Any, text: str) -> None:
        made.append(text)
        real(self, text)

    monkeypatch.setattr(actions._Nesting, "__init__", counted)
    for answer in (
        '{"k" ' * 63 + '"' * 19_000,
        '{"k" ' * 63 + "[ " * 9_500,
        '{"k":' * 63 + '["x",' * 3_000,
    ):
        made.clear()
        with pytest.raises(ActionSyntaxError):
            extract_json_object(answer[:MAX_MODEL_TEXT_CHARS])
        assert len(made) == 1
