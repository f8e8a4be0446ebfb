"""Review 18 of the model client, through the REAL openai client against the loopback server
sending whole replies (headers such as ``Retry-After``, error bodies): rate limits and retries,
the token limit's parameter name and the temperature, refusals and error bodies, and the CLI's
options."""

from __future__ import annotations

import email.utils
import logging
import socket
import time
from collections.abc import Callable
from typing import Any

import pytest
from _adb import TINY
from test_agent_llm import LoopbackModel, Reply, config

from agent.actions import Tap
from agent.cli import EXIT_CODES, main
from agent.llm import (
    ChatModel,
    LLMConfig,
    LLMError,
    LLMTimeoutError,
    LLMUnavailableError,
    UnusableAnswerError,
)
from agent.prompt import build_messages
from perception import perceive
from perception.demo import demo_png, demo_xml
from perception.errors import ConfigError
from perception.pipeline import Observation


def completion(content: str | None, **message: Any) -> dict[str, Any]:
    return {
        "id": "c", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content, **message}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def ok(content: str) -> Reply:
    return 200, completion(content), {}


def failure(status: int, message: str, headers: dict[str, str] | None = None, **error: Any
            ) -> Reply:
    return status, {"error": {"message": message, "type": "x", **error}}, headers or {}


@pytest.fixture(scope="module")
def demo() -> Observation:
    return perceive(demo_xml(), demo_png())


@pytest.fixture
def messages(demo: Observation) -> list[Any]:
    return list(build_messages(demo, "Connect to Cafe Corner", step=1, steps_left=9))


def wifi_tap(demo: Observation) -> str:
    wifi = next(c.id for c in demo.candidates if c.text == "Use Wi-Fi")
    return f'{{"action":"tap","id":{wifi}}}'


# 1. Rate limits: Retry-After, jittered backoff, LLMUnavailableError


def test_retry_after_in_seconds_is_honoured(demo: Observation, messages: list[Any]) -> None:
    """Two 429s asking for 1 s each: the retries wait 1 s each (they went after 0.5 s and 1 s,
    whatever the server said, and a 2 s ask spent all retries in 1.5 s)."""
    answer = wifi_tap(demo)

    def script(n: int, body: dict[str, Any]) -> Reply:
        if n <= 2:
            return failure(429, "Rate limit reached", {"Retry-After": "1"})
        return ok(answer)

    with LoopbackModel(replies=script) as server:
        decision = ChatModel(config(server, transport_retries=2)).decide(
            messages, demo, timeout_s=10.0
        )
    assert isinstance(decision.action, Tap)
    assert len(server.requests) == 3
    assert all(0.95 <= gap < 2.5 for gap in server.gaps()), server.gaps()


def test_retry_after_as_an_http_date_and_in_ms(demo: Observation, messages: list[Any]) -> None:
    answer = wifi_tap(demo)
    when: list[str] = []

    def dated(n: int, body: dict[str, Any]) -> Reply:
        if n == 1:
            when.append(email.utils.formatdate(time.time() + 2, usegmt=True))
            return failure(503, "overloaded", {"Retry-After": when[0]})
        return ok(answer)

    with LoopbackModel(replies=dated) as server:
        ChatModel(config(server, transport_retries=1)).decide(messages, demo, timeout_s=10.0)
    # An HTTP date has whole seconds: 2 s ahead is 1-2 s ahead.
    assert 0.95 <= server.gaps()[0] < 2.6, (when, server.gaps())

    def in_ms(n: int, body: dict[str, Any]) -> Reply:
        if n == 1:
            return failure(429, "slow down", {"retry-after-ms": "300", "Retry-After": "9"})
        return ok(answer)

    with LoopbackModel(replies=in_ms) as server:
        ChatModel(config(server, transport_retries=1)).decide(messages, demo, timeout_s=10.0)
    assert 0.28 <= server.gaps()[0] < 5, server.gaps()  # the ms header, not the 9 s one


def test_a_longer_retry_after_than_the_deadline_gives_up_at_once_and_is_waited_out_next(
    demo: Observation, messages: list[Any]
) -> None:
    """The server's pause is past the step's deadline: no sleeping through the step for a retry
    that cannot come; the next request waits out the rest before it is sent."""
    answer = wifi_tap(demo)

    def script(n: int, body: dict[str, Any]) -> Reply:
        return failure(429, "Rate limit reached", {"Retry-After": "2"}) if n == 1 else ok(answer)

    with LoopbackModel(replies=script) as server:
        chat = ChatModel(config(server, transport_retries=3))
        t0 = time.monotonic()
        with pytest.raises(LLMUnavailableError) as info:
            chat.decide(messages, demo, timeout_s=1.0)
        assert time.monotonic() - t0 < 1.5  # not the 2 s asked: the deadline is 1 s
        message = str(info.value)
        assert "HTTP 429, rate limited" in message and "Rate limit reached" in message
        assert "asked to retry after 2.0 s" in message and "no time left to retry" in message
        # The next step's request: too short a deadline to wait it out: nothing is sent.
        t0 = time.monotonic()
        with pytest.raises(LLMUnavailableError, match="nothing was sent"):
            chat.decide(messages, demo, timeout_s=0.3)
        assert 0.25 <= time.monotonic() - t0 < 1.5  # to the deadline, not the 2 s
        assert len(server.requests) == 1
        # And one with time enough: sent when the server said, answered.
        decision = chat.decide(messages, demo, timeout_s=10.0)
        assert isinstance(decision.action, Tap)
    assert len(server.requests) == 2
    assert 1.9 <= server.gaps()[0] < 3.5, server.gaps()


def test_without_retry_after_the_backoff_is_jittered_and_bounded(
    demo: Observation, messages: list[Any]
) -> None:
    with LoopbackModel(replies=lambda n, body: failure(503, "the model is loading")) as server:
        t0 = time.monotonic()
        with pytest.raises(LLMUnavailableError) as info:
            ChatModel(config(server, transport_retries=2)).decide(messages, demo, timeout_s=10.0)
        assert time.monotonic() - t0 < 4.0
    first, second = server.gaps()
    # 0.5 s and 1 s, +-50%, plus what a busy machine adds to a request
    assert 0.24 <= first <= 1.25 and 0.49 <= second <= 2.0, server.gaps()
    message = str(info.value)
    assert "answered HTTP 503, the server failed (3 attempts in" in message
    assert "the model is loading" in message and "its log says why" in message
    assert not isinstance(info.value, LLMTimeoutError)


def test_client_errors_are_not_retried_nor_unavailable(
    demo: Observation, messages: list[Any]
) -> None:
    for status in (400, 401, 404):
        with LoopbackModel(replies=lambda n, body, s=status: failure(s, "no such thing")) as server:
            with pytest.raises(LLMError, match=f"HTTP {status}: .*no such thing") as info:
                ChatModel(config(server, transport_retries=3)).decide(messages, demo)
        assert not isinstance(info.value, LLMUnavailableError)
        assert len(server.requests) == 1


def test_an_unreachable_server_is_unavailable(demo: Observation, messages: list[Any]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    chat = ChatModel(LLMConfig(base_url=f"http://127.0.0.1:{port}/v1", model="m", api_key="k",
                               transport_retries=1))
    with pytest.raises(LLMUnavailableError, match=r"cannot reach .*2 attempts.*server runs"):
        chat.decide(messages, demo, timeout_s=5.0)


# 2. The token limit's name and the temperature (OpenAI's o-series and gpt-5)

MAX_TOKENS_REFUSED = (
    "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
    "'max_completion_tokens' instead."
)
TEMPERATURE_REFUSED = (
    "Unsupported value: 'temperature' does not support 0.0 with this model. Only the default "
    "(1) value is supported."
)


def like_gpt5(answer: str) -> Callable[[int, dict[str, Any]], Reply]:
    """A server refusing max_tokens (naming it in ``param``) and any temperature (naming it
    in the message only), as OpenAI's reasoning models do."""

    def script(n: int, body: dict[str, Any]) -> Reply:
        if "max_tokens" in body:
            return failure(400, MAX_TOKENS_REFUSED, param="max_tokens",
                           code="unsupported_parameter")
        if "temperature" in body:
            return failure(400, TEMPERATURE_REFUSED, code="unsupported_value")
        return ok(answer)

    return script


def test_a_refused_token_limit_and_temperature_are_switched_once(
    demo: Observation, messages: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    with LoopbackModel(replies=like_gpt5(wifi_tap(demo))) as server:
        chat = ChatModel(config(server, max_tokens=222, transport_retries=0))
        with caplog.at_level(logging.WARNING, logger="agent.llm"):
            assert isinstance(chat.decide(messages, demo).action, Tap)
            assert isinstance(chat.decide(messages, demo).action, Tap)
    sent = [sorted(k for k in body if k not in ("messages", "model")) for body in server.requests]
    assert sent == [["max_tokens", "temperature"], ["max_completion_tokens", "temperature"],
                    ["max_completion_tokens"], ["max_completion_tokens"]]
    assert server.requests[-1]["max_completion_tokens"] == 222
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 2
    assert "refuses max_tokens" in warnings[0] and "sending max_completion_tokens" in warnings[0]
    assert "takes no temperature" in warnings[1]


def test_the_config_chooses_what_is_sent(demo: Observation, messages: list[Any]) -> None:
    with LoopbackModel(replies=like_gpt5(wifi_tap(demo))) as server:
        ChatModel(config(server, token_limit_param="max_completion_tokens",
                         temperature=None)).decide(messages, demo)
    assert len(server.requests) == 1
    assert sorted(server.requests[0]) == ["max_completion_tokens", "messages", "model"]
    for bad in ({"token_limit_param": "max_output_tokens"}, {"temperature": float("nan")},
                {"temperature": -1.0}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            LLMConfig(base_url="http://127.0.0.1:1/v1", model="m", **bad)


def test_a_server_refusing_both_names_is_an_error_not_a_ping_pong(
    demo: Observation, messages: list[Any]
) -> None:
    def script(n: int, body: dict[str, Any]) -> Reply:
        name = "max_tokens" if "max_tokens" in body else "max_completion_tokens"
        return failure(400, f"Unsupported parameter: '{name}'", param=name)

    with LoopbackModel(replies=script) as server:
        with pytest.raises(LLMError, match="HTTP 400: Unsupported parameter: 'max_completion"):
            ChatModel(config(server, transport_retries=3)).decide(messages, demo)
    assert len(server.requests) == 2


def test_the_cli_sends_what_its_options_say(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("PERCEPTION_ENGINE_TREE_INTERVAL_MS", "20")
    monkeypatch.setenv("PERCEPTION_ENGINE_FRAME_INTERVAL_MS", "20")
    finish = '{"action":"finish","answer":"ok"}'
    base = ["--replay", str(TINY), "--task", "t", "--model", "gpt-5-mini", "--api-key", "k"]
    with LoopbackModel(replies=like_gpt5(finish)) as server:
        # The default (max_tokens, temperature 0) is switched after the server's answers.
        assert main([*base, "--base-url", server.base_url]) == 0
        assert len(server.requests) == 3
        assert "refuses max_tokens" in caplog.text
    with LoopbackModel(replies=like_gpt5(finish)) as server:
        assert main([*base, "--base-url", server.base_url, "--token-limit-param",
                     "max_completion_tokens", "--no-temperature", "--max-tokens", "50"]) == 0
    assert server.requests[0]["max_completion_tokens"] == 50
    assert "temperature" not in server.requests[0] and len(server.requests) == 1
    with LoopbackModel(replies=lambda n, body: ok(finish)) as server:
        assert main([*base, "--base-url", server.base_url, "--temperature", "0.7"]) == 0
    assert server.requests[0]["temperature"] == 0.7
    for bad in (["--temperature", "3"], ["--temperature", "0.5", "--no-temperature"],
                ["--token-limit-param", "max_output_tokens"]):
        with pytest.raises(SystemExit) as info:
            main([*base, "--base-url", "http://127.0.0.1:1/v1", *bad])
        assert info.value.code == 2


# 3. Replies that hold no completion: say what they hold


def test_a_refusal_is_named(demo: Observation, messages: list[Any]) -> None:
    refused = completion(None, refusal="I'm sorry, I can't help\nwith that.")
    with LoopbackModel(replies=lambda n, body: (200, refused, {})) as server:
        with pytest.raises(UnusableAnswerError) as info:
            ChatModel(config(server)).decide(messages, demo)
    for error in info.value.errors:
        assert "refused to answer: \"I'm sorry, I can't help with that.\"" in error, error
        assert "empty" not in error
    assert "refused to answer" in server.requests[1]["messages"][-1]["content"]


def test_a_200_without_a_completion_says_what_it_held(
    demo: Observation, messages: list[Any]
) -> None:
    cases: list[tuple[Reply, str]] = [
        ((200, {"error": {"message": "upstream quota exceeded", "code": 429}}, {}),
         r"answered with an error instead of a completion \(code 429\): upstream quota"),
        ((200, "<html>bad gateway</html>", {"Content-Type": "text/html"}),
         r"not a chat completion: '<html>bad gateway</html>'"),
        ((200, "<html>bad gateway</html>", {}), r"answered a body that is not JSON"),
        ((200, {"choices": []}, {}), r"answered without choices or message"),
    ]
    for reply, match in cases:
        with LoopbackModel(replies=lambda n, body, r=reply: r) as server:
            with pytest.raises(LLMError, match=match) as info:
                ChatModel(config(server, transport_retries=2)).decide(messages, demo)
        assert not isinstance(info.value, LLMUnavailableError)
        assert len(server.requests) == 1


def test_a_timeout_without_a_deadline_names_no_deadline(
    demo: Observation, messages: list[Any]
) -> None:
    def slow(n: int, body: dict[str, Any]) -> Reply:
        time.sleep(1.5)
        return ok(wifi_tap(demo))

    with LoopbackModel(replies=slow) as server:
        with pytest.raises(LLMTimeoutError, match=r"did not answer within 0\.4 s$"):
            ChatModel(config(server, timeout_s=0.4)).decide(messages, demo)
        with pytest.raises(LLMTimeoutError, match=r"within 0\.3 s \(the time left before"):
            ChatModel(config(server, timeout_s=0.4)).decide(messages, demo, timeout_s=0.3)


# 4. perception-agent: --help, usage errors that name the option, the /v1 hint


def test_help_lists_the_exit_codes_and_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    epilog = text[text.index("exit codes:"):]
    listed = {int(line.split()[0]) for line in epilog.splitlines()[1:]}
    assert set(EXIT_CODES.values()) <= listed and 143 in listed and 2 in listed
    assert "gave up" in epilog and "SIGTERM" in epilog
    options = text[text.index("options:"):]
    retries = options[options.index("--llm-retries"):options.index("--max-tokens")]
    assert "(default 2)" in " ".join(retries.split())


@pytest.mark.parametrize(
    ("option", "value", "said"),
    [
        ("--llm-timeout-s", "inf", "number of seconds > 0"),
        ("--llm-timeout-s", "nan", "number of seconds > 0"),
        ("--step-timeout-s", "0", "number of seconds > 0"),
        ("--llm-retries", "-1", "whole number >= 0"),
        ("--settle-ms", "-5", "whole number >= 0"),
        ("--loading-waits", "1.5", "whole number >= 0"),
        ("--steps", "0", "whole number > 0"),
        ("--max-tokens", "-3", "whole number > 0"),
        ("--loading-wait-ms", "999999", "must be at most"),
    ],
)
def test_a_bad_value_names_its_option(
    option: str, value: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--replay", str(TINY), "--task", "t", "--base-url", "http://127.0.0.1:1/v1",
              "--model", "m", f"{option}={value}"])
    assert info.value.code == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert option in error and said in error, error
    assert "_" not in error.split(":", 1)[1], error  # no field name (timeout_s, settle_ms)


def test_adb_options_with_a_replay_are_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    for extra in (["--adb-port", "5037"], ["--adb-host", "10.0.0.2"]):
        with pytest.raises(SystemExit) as info:
            main(["--replay", str(TINY), "--task", "t", "--base-url", "http://127.0.0.1:1/v1",
                  "--model", "m", *extra])
        assert info.value.code == 2
        assert "need a phone (--serial)" in capsys.readouterr().err


def test_a_404_from_a_base_url_without_v1_suggests_it(
    demo: Observation, messages: list[Any], monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with LoopbackModel(replies=lambda n, body: ok(wifi_tap(demo))) as server:
        root = server.base_url.removesuffix("/v1")
        with pytest.raises(LLMError, match=rf"HTTP 404: .*\(did you mean {root}/v1\?\)$"):
            ChatModel(LLMConfig(base_url=root, model="m", api_key="k")).decide(messages, demo)
        monkeypatch.setenv("PERCEPTION_ENGINE_TREE_INTERVAL_MS", "20")
        code = main(["--replay", str(TINY), "--task", "t", "--base-url", root + "/", "--model",
                     "m", "--api-key", "k"])
        assert code == 1
        assert f"did you mean {root}/v1?" in capsys.readouterr().err
    # A 404 from a /v1 address (a model that does not exist) has no such hint.
    missing = failure(404, "The model `m` does not exist")
    with LoopbackModel(replies=lambda n, body: missing) as server:
        with pytest.raises(LLMError, match=r"does not exist$"):
            ChatModel(config(server)).decide(messages, demo)
