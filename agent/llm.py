"""The decision model: any OpenAI-compatible chat-completions endpoint (the only openai import).

:class:`ChatModel` owns one ``openai.OpenAI`` client (base URL, key, model name, timeouts and
transport retries for 5xx / connection errors, which the openai client does itself).
:meth:`ChatModel.decide` asks for one action, parses and validates it against the observation
(:func:`agent.actions.parse_action`) and, when the answer is malformed or invalid, sends the
error back to the model and asks again, at most ``repair_attempts`` times (one by default).
Transport failures become :class:`LLMError` / :class:`LLMTimeoutError`; an answer that stays
unusable becomes :class:`UnusableAnswerError` carrying every answer received.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import openai

from agent.actions import Action, ActionError, parse_action
from agent.prompt import ChatMessage, repair_message
from perception.errors import ConfigError, PerceptionError
from perception.pipeline import Observation

log = logging.getLogger(__name__)


class LLMError(PerceptionError):
    """The model endpoint failed (connection, HTTP status, an answer without choices)."""


class LLMTimeoutError(LLMError, TimeoutError):
    """The model did not answer within the timeout."""


class UnusableAnswerError(ActionError):
    """The model's answers stayed invalid after the repair attempts; ``answers`` holds them."""

    def __init__(self, message: str, *, answers: Sequence[str], errors: Sequence[str]) -> None:
        super().__init__(message)
        self.answers = tuple(answers)
        self.errors = tuple(errors)


@dataclass(frozen=True, slots=True, kw_only=True)
class LLMConfig:
    base_url: str
    """E.g. ``http://127.0.0.1:8000/v1`` (vLLM, llama.cpp, Ollama) or the OpenAI API."""
    model: str
    api_key: str | None = None
    """None: the openai client reads ``OPENAI_API_KEY`` (local servers accept any value)."""
    timeout_s: float = 60.0
    """Per request (the loop passes less when its step deadline is closer)."""
    transport_retries: int = 2
    """Retries of connection errors, 408/429/5xx by the openai client (with its backoff)."""
    repair_attempts: int = 1
    """How often a malformed or invalid answer is sent back with the error."""
    temperature: float = 0.0
    max_tokens: int = 400

    def __post_init__(self) -> None:
        if not self.base_url or not self.model:
            raise ConfigError("base_url and model are required")
        if self.timeout_s <= 0:
            raise ConfigError(f"timeout_s must be > 0, got {self.timeout_s}")
        if self.transport_retries < 0 or self.repair_attempts < 0:
            raise ConfigError("transport_retries and repair_attempts must be >= 0")
        if self.max_tokens <= 0:
            raise ConfigError(f"max_tokens must be > 0, got {self.max_tokens}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Completion:
    text: str
    latency_ms: float
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """A validated action and how it was obtained."""

    action: Action
    answers: tuple[str, ...]
    """Every raw answer, the accepted one last."""
    errors: tuple[str, ...]
    """Why the earlier answers were rejected (one per rejected answer)."""
    latency_ms: float
    prompt_tokens: int
    completion_tokens: int


class ChatModel:
    """One OpenAI-compatible endpoint and model; safe to share between loops of one process."""

    def __init__(self, config: LLMConfig, *, client: openai.OpenAI | None = None) -> None:
        self.config = config
        if client is None:
            try:
                client = openai.OpenAI(
                    base_url=config.base_url,
                    api_key=config.api_key,
                    timeout=config.timeout_s,
                    max_retries=config.transport_retries,
                )
            except openai.OpenAIError as exc:
                raise LLMError(
                    f"cannot create the client: {exc} (pass an api key; local servers accept "
                    "any value)"
                ) from exc
        self._client = client

    def complete(
        self, messages: Sequence[ChatMessage], *, timeout_s: float | None = None
    ) -> Completion:
        """One chat completion; the text of the first choice ("" when it has none)."""
        timeout = self.config.timeout_s if timeout_s is None else max(0.001, timeout_s)
        t0 = time.perf_counter_ns()
        try:
            response = self._client.chat.completions.create(
                model=self.config.model,
                messages=cast(Any, list(messages)),
                temperature=self.config.temperature,
                max_tokens=self.config.max_tokens,
                timeout=timeout,
            )
        except openai.APITimeoutError as exc:
            raise LLMTimeoutError(
                f"{self.config.model} at {self.config.base_url} did not answer within "
                f"{timeout:.1f} s"
            ) from exc
        except openai.APIStatusError as exc:
            raise LLMError(
                f"{self.config.base_url} answered HTTP {exc.status_code}: {_first_line(exc)}"
            ) from exc
        except openai.OpenAIError as exc:
            raise LLMError(f"{self.config.base_url}: {type(exc).__name__}: {exc}") from exc
        latency_ms = (time.perf_counter_ns() - t0) / 1e6
        choices = getattr(response, "choices", None)
        if not choices:
            raise LLMError(f"{self.config.base_url} answered without choices")
        text = choices[0].message.content or ""
        usage = getattr(response, "usage", None)
        return Completion(
            text=text,
            latency_ms=latency_ms,
            prompt_tokens=getattr(usage, "prompt_tokens", None),
            completion_tokens=getattr(usage, "completion_tokens", None),
        )

    def decide(
        self,
        messages: Sequence[ChatMessage],
        observation: Observation,
        *,
        timeout_s: float | None = None,
    ) -> Decision:
        """Ask for one action on ``observation``; repair bad answers a bounded number of times.

        ``timeout_s`` bounds the whole decision (all attempts together).
        """
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        convo = list(messages)
        answers: list[str] = []
        errors: list[str] = []
        latency_ms = 0.0
        prompt_tokens = completion_tokens = 0
        for attempt in range(self.config.repair_attempts + 1):
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise LLMTimeoutError(f"no time left for attempt {attempt + 1} of the decision")
            done = self.complete(convo, timeout_s=remaining)
            answers.append(done.text)
            latency_ms += done.latency_ms
            prompt_tokens += done.prompt_tokens or 0
            completion_tokens += done.completion_tokens or 0
            try:
                action = parse_action(done.text, observation)
            except ActionError as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
                log.info("answer %d rejected: %s", attempt + 1, exc)
                convo.append({"role": "assistant", "content": done.text})
                convo.append(repair_message(exc))
                continue
            return Decision(
                action=action,
                answers=tuple(answers),
                errors=tuple(errors),
                latency_ms=round(latency_ms, 3),
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
            )
        raise UnusableAnswerError(
            f"{len(answers)} answer(s) rejected, last: {errors[-1]}",
            answers=answers,
            errors=errors,
        )

    def close(self) -> None:
        self._client.close()


def _first_line(exc: openai.APIStatusError) -> str:
    text = str(getattr(exc, "message", "") or exc)
    return text.splitlines()[0][:200] if text else ""
