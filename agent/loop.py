"""observe -> decide -> act, with a step budget, a per-step deadline and loop detection.

:class:`Agent` drives one phone: it takes observations from a :class:`perception.Engine`
(after every action it sets the engine's barrier with ``mark_action()`` and waits for an
observation built only from data captured after it, so a decision is never made on a screen
captured before the previous action landed), asks the decision model
(:class:`agent.llm.ChatModel`) and carries the action out (:class:`agent.executor.Executor`).

Each action's outcome says what it did: ``page changed`` (the page fingerprint),
``same page, content changed`` (the digest of the listed candidates, :func:`content_digest`)
or ``nothing changed``. It stops on ``finish``, when the budget of steps is spent, when the same
action is chosen on the same content ``loop_repeats`` times within ``loop_window`` steps (a
:class:`perception.fusion.loop.LoopDetector` over (page fingerprint, content digest, action),
fed once per step: the Perceiver's own loop report counts engine observations, not steps),
when a step overruns its deadline, on a device or model failure (a model error is recorded as
the step's outcome first), after ``max_unusable_steps`` steps in a row without a usable answer
(a rejected answer or a model timeout), or when the screen asks for a person (``hand_over``: a
FLAG_SECURE screen, a captcha). It always returns a :class:`Transcript`, whatever the model
object raises; the stop reason and error say how it ended. A rejected model answer, a model
timeout or an action the device cannot carry out is recorded in the history the model sees and
the loop goes on.
"""

from __future__ import annotations

import enum
import hashlib
import inspect
import json
import logging
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from agent.actions import (
    MAX_WAIT_MS,
    Action,
    ActionError,
    ActionSchemaError,
    Finish,
    LongPress,
    SetSlider,
    Swipe,
    Tap,
    TapAt,
    Type,
    Wait,
    focused_fields,
)
from agent.executor import ExecutionError, Executor
from agent.llm import Decision, LLMError, LLMTimeoutError, LLMUnavailableError
from agent.prompt import (
    HISTORY_STEPS,
    MARKS_MAX_SIDE_PX,
    ChatMessage,
    HistoryItem,
    build_messages,
)
from perception import fastpath
from perception.errors import ConfigError, DeviceTimeoutError, FrameError, PerceptionError
from perception.fusion.candidates import Candidate
from perception.fusion.crossval import normalise_text
from perception.fusion.loop import LoopDetector
from perception.fusion.screen import OperationKind
from perception.geometry import box_px_to_pm, point_pm_to_px
from perception.pipeline import Observation
from perception.types import Channel, PointPx

log = logging.getLogger(__name__)


def _under(
    obs: Observation, point: PointPx, *, tree: bool, listed: bool = False
) -> Candidate | None:
    """The smallest candidate under ``point``, not occluded; of the tree's (``tree``), when the
    two observations compared both have one: their pixel candidates (OCR lines, icons) differ
    with the arbiter's state, not with the screen. ``listed``: only those the prompt lists (a
    tree's rows the pixels do not show are kept, unlisted, on an observation that calls its
    tree another moment's)."""
    best = None
    for c in obs.candidates:
        if (
            c.occluded
            or not c.box_px.contains(point)
            or (tree and c.source is Channel.PIXEL)
            or (listed and not c.listed)
        ):
            continue
        if best is None or c.box_px.area < best.box_px.area:
            best = c
    return best


def _has_tree(obs: Observation) -> bool:
    return obs.tree_error is None and any(c.source is not Channel.PIXEL for c in obs.candidates)


_DIGITS = re.compile(r"\d+")


def _same_element(a: Candidate, b: Candidate, *, kind: bool = True) -> bool:
    """What lies under the tap point then (``a``) and now (``b``) is the same control: the same
    kind (unless not ``kind``: a tree's button and the pixels' reading of it), and the same
    label up to its numbers (a timer's "0:59" -> "1:00", a "40%" -> "47%" progress button) or a
    character in four apart."""
    if kind and a.kind != b.kind:
        return False
    x, y = (_DIGITS.sub("#", normalise_text(c.text)) for c in (a, b))
    if x == y:
        return True
    if not x or not y:
        return False
    return fastpath.edit_distance(x[:64], y[:64]) <= max(len(x[:64]), len(y[:64])) // 4


class AgentError(PerceptionError):
    """The decision loop could not go on."""


class StepTimeoutError(AgentError, TimeoutError):
    """A step (observe + decide + act) overran its deadline."""


class Observer(Protocol):
    """What the loop needs from :class:`perception.Engine` (with :attr:`LoopConfig.marks`, a
    ``last_frame()`` too: :meth:`perception.Engine.last_frame`)."""

    def observe(self, after_action: bool = False, *, timeout_s: float | None = None) -> Any: ...

    def mark_action(self) -> int: ...


class Decider(Protocol):
    """What the loop needs from :class:`agent.llm.ChatModel`; any model can stand in for it.

    ``decide`` gets the chat messages (:func:`agent.prompt.build_messages`) and the
    observation they describe, and returns a :class:`agent.llm.Decision` whose action came from
    :func:`agent.actions.parse_action` (which checks it against the observation). An answer
    that cannot be used raises an :class:`agent.actions.ActionError` (``parse_action``'s
    errors are; :class:`agent.llm.UnusableAnswerError` carries the raw answers too): the step
    is recorded as rejected and the loop goes on. An :class:`agent.llm.LLMTimeoutError` counts
    the same way; any other exception stops the run with a transcript (stop ``error``).

    Two keywords are passed only to a ``decide`` that takes them, and only when not their
    default, so a model object written without them type-checks and runs: ``coords=False``
    (the id-only prompt, :attr:`LoopConfig.coords`: ``parse_action`` must refuse grid points)
    and ``unicode_text=True`` (the phone types any text: ``parse_action`` must allow it; a
    ``decide`` without the keyword keeps the phone's text to printable ASCII)."""

    def decide(
        self,
        messages: Sequence[ChatMessage],
        observation: Observation,
        *,
        timeout_s: float | None = None,
    ) -> Decision: ...


MIN_MARKS_SIDE_PX = 64
"""The smallest screenshot side :func:`perception.draw_marks` draws (its ``MIN_MAX_SIDE_PX``;
checked here without loading OpenCV for a run that sends no image)."""

MAX_WAKES = 2
"""Wakes (and swipe-lock openings) in a row after which a screen that stays off or locked
ends the run (handed over)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopConfig:
    max_steps: int = 20
    """The step budget (each model decision is one step)."""
    step_timeout_s: float = 120.0
    """Deadline of one step: waiting for a usable observation, the model and the action."""
    settle_ms: int = 300
    """Pause after an action before asking for a post-action observation."""
    history_steps: int = HISTORY_STEPS
    loop_window: int = 10
    """Steps over which the same action on the same content ``loop_repeats`` times is a loop:
    10 catches a cycle of up to four pages (New note, Save, back, ...), which 6 let run to the
    budget."""
    loop_repeats: int = 3
    coords: bool = True
    """Show where rows are in the prompt (centres, boxes for scroll areas) and allow actions by
    grid point (the id-only form costs about 60% of the tokens, and offers no tap_at or point
    swipe)."""
    max_unusable_steps: int = 3
    """Stop after this many steps in a row without a usable answer (rejected answers, model
    timeouts, a server rate-limited or failing through its retries; stop ``timeout`` when the
    last one timed out, else ``error``)."""
    hand_over: bool = True
    """Stop (``hand_over``) when the observation says a person should take over: a FLAG_SECURE
    screen (a bank's or a password manager's) or a captcha. False leaves it to the model, whose
    prompt shows the hint."""
    recheck_inconsistent: int = 1
    """Observe again, up to this many times a step, when tree and pixels disagree (a dump of
    another moment than the frame: the next captures usually agree); the model gets the last
    observation, with its warning if it still disagrees."""
    loading_waits: int = 2
    """Wait :attr:`loading_wait_ms` and observe again, up to this many times a step, when the
    observation says the screen is loading (a ``wait`` operation: a loading screen, a splash,
    part of the page spinning, an app still drawing) before asking the model, which would
    only answer ``wait`` (a model call and its tokens each time); the model gets the last
    observation, with its ``wait`` hint if it still loads. 0 asks the model at once."""
    loading_wait_ms: int = 1000
    marks: bool = False
    """Send the model the set-of-marks screenshot of the frame each observation was fused from
    (:func:`agent.prompt.build_messages` with ``frame``: for a vision-language model) before the
    same text; a step whose observation had no frame is sent the text alone
    (:attr:`StepRecord.images` 0). Needs an engine with ``last_frame()``
    (:meth:`perception.Engine.last_frame`)."""
    marks_max_side_px: int = MARKS_MAX_SIDE_PX
    """The screenshot's longer side at most (scaled down, never up)."""
    recheck_target: bool = True
    """Before a tap, long press or typing on an element (or a tap at a point), look at the
    newest observation the engine fused while the model decided (``peek()``,
    :meth:`perception.Engine.peek`; nothing is captured for it): when the target is no longer
    there (a dialog came up over it, the page changed, the list moved), the action is not sent
    and the next step asks again on the new screen. A model takes seconds; a tap sent on the
    old screen's coordinates hits whatever is there now, and the next screen looks like
    progress."""

    def __post_init__(self) -> None:
        if self.max_steps <= 0:
            raise ConfigError(f"max_steps must be > 0, got {self.max_steps}")
        if not (math.isfinite(self.step_timeout_s) and self.step_timeout_s > 0):
            raise ConfigError(
                f"step_timeout_s must be a finite number > 0, got {self.step_timeout_s}"
            )
        if not math.isfinite(self.settle_ms) or self.settle_ms < 0 or self.history_steps < 0:
            raise ConfigError("settle_ms and history_steps must be >= 0")
        if self.loop_repeats < 2 or self.loop_window < self.loop_repeats:
            raise ConfigError("need loop_repeats >= 2 and loop_window >= loop_repeats")
        if self.recheck_inconsistent < 0:
            raise ConfigError("recheck_inconsistent must be >= 0")
        for name in ("loading_waits", "loading_wait_ms"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"{name} must be a whole number >= 0, got {value!r:.40}")
        if self.loading_wait_ms > MAX_WAIT_MS:
            raise ConfigError(f"loading_wait_ms must be at most {MAX_WAIT_MS}")
        if self.max_unusable_steps < 1:
            raise ConfigError(f"max_unusable_steps must be >= 1, got {self.max_unusable_steps}")
        if (
            isinstance(self.marks_max_side_px, bool)
            or not isinstance(self.marks_max_side_px, int)
            or self.marks_max_side_px < MIN_MARKS_SIDE_PX
        ):
            raise ConfigError(
                f"marks_max_side_px must be a whole number of pixels >= {MIN_MARKS_SIDE_PX}, "
                f"got {self.marks_max_side_px!r:.40}"
            )


@enum.unique
class StopReason(enum.StrEnum):
    FINISHED = "finished"
    BUDGET = "budget"
    LOOP = "loop"
    TIMEOUT = "timeout"
    ERROR = "error"
    INTERRUPTED = "interrupted"
    """Ctrl-C or SIGTERM (set by the command line, which keeps the steps run so far)."""
    HAND_OVER = "hand_over"
    """The screen asks for a person (:attr:`LoopConfig.hand_over`); the last step's outcome
    says why."""
    GAVE_UP = "gave_up"
    """The model finished saying the task cannot be done (``"done": false``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StepRecord:
    step: int
    page: str
    """Fingerprint of the page the decision was made on."""
    epoch: int
    state: str
    """Arbiter state of that observation (tree, unstable, pixel)."""
    candidates: int
    answers: tuple[str, ...]
    """The model's raw answers (more than one when a malformed answer was repaired)."""
    rejected: tuple[str, ...]
    action: Action | None
    commands: tuple[str, ...]
    outcome: str
    observe_ms: float
    decide_ms: float
    act_ms: float
    prompt_tokens: int = 0
    completion_tokens: int = 0
    images: int | None = None
    """Images sent to the model with this step's screen (:attr:`LoopConfig.marks`): 1, or 0
    when the observation had no frame (the text alone was sent); None when marks are off or
    the model was not asked. ``prompt_tokens`` (the server's count) includes the image."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "step": self.step,
            "page": self.page,
            "epoch": self.epoch,
            "state": self.state,
            "candidates": self.candidates,
            "answers": list(self.answers),
            "rejected": list(self.rejected),
            "action": None if self.action is None else self.action.to_json(),
            "commands": list(self.commands),
            "outcome": self.outcome,
            "observe_ms": self.observe_ms,
            "decide_ms": self.decide_ms,
            "act_ms": self.act_ms,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }
        if self.images is not None:
            out["images"] = self.images
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Transcript:
    task: str
    steps: tuple[StepRecord, ...]
    stop: StopReason
    answer: str | None = None
    """The model's ``finish`` answer."""
    error: str | None = None
    """``ErrorType: message`` when the loop stopped on a failure (timeout, error)."""

    @property
    def ok(self) -> bool:
        return self.stop is StopReason.FINISHED

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "stop": self.stop.value,
            "answer": self.answer,
            "error": self.error,
            "steps": [s.to_json() for s in self.steps],
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), ensure_ascii=False, indent=1)


@enum.unique
class Change(enum.StrEnum):
    """What an action did to the screen, as the history tells the model."""

    PAGE = "page changed"
    CONTENT = "same page, content changed"
    NOTHING = "nothing changed"


def content_digest(observation: Observation) -> str:
    """A digest of what the model is shown: every listed candidate's kind, text, box on the
    0-1000 grid, flags and "+N" (digits kept, unlike the page fingerprint, which masks them and
    reads only the first texts: it names a page, this says whether its content moved)."""
    screen = observation.screen
    h = hashlib.blake2b(digest_size=8)
    for c in observation.candidates:
        if not getattr(c, "listed", True):
            continue
        box = tuple(box_px_to_pm(c.box_px, screen.size)) if screen is not None else ()
        h.update(repr((c.kind, c.text, box, int(c.flags), c.more)).encode())
    return h.hexdigest()


NOT_TYPED = "the typed text is in no field (none had the focus, or the app took no text)"


def typed_into_a_field(action: Type, before: Observation, after: Observation) -> bool:
    """Does a field hold the text after the ``type`` (``obs.field_texts`` of the screen after
    it)? True when no one can tell: no tree to read fields from, a password field (it shows
    dots). A ``type`` into nothing is sent and reported done by the phone (``input text`` and
    ADB Keyboard's broadcast alike), so the next screen is the only witness."""
    if not after.field_texts:
        return True
    if action.candidate_id is not None:
        targets = [c for c in before.candidates if c.id == action.candidate_id]
    else:
        targets = focused_fields(before)
    if any(c.password for c in targets):
        return True
    wanted = " ".join(action.text.split())
    return any(wanted in " ".join(text.split()) for text in after.field_texts.values())


def screen_change(
    before: Observation, before_digest: str, after: Observation
) -> tuple[Change, str | None]:
    """Page changed (fingerprint), same page with other content, or nothing changed; and
    ``after``'s :func:`content_digest` when it was needed (the loop keys the next step on it).
    ``before_digest`` is ``before``'s, computed by the caller already."""
    page = before.screen.fingerprint if before.screen is not None else ""
    new_page = after.screen.fingerprint if after.screen is not None else ""
    if new_page != page:
        return Change.PAGE, None
    after_digest = content_digest(after)
    return (Change.CONTENT if after_digest != before_digest else Change.NOTHING), after_digest


def _ms(since_ns: int) -> float:
    return round((time.perf_counter_ns() - since_ns) / 1e6, 3)


def _by_grid_point(action: Action) -> bool:
    """Does ``action`` name a place by grid point (what the id-only prompt does not offer)?"""
    return isinstance(action, TapAt) or (isinstance(action, Swipe) and action.start_pm is not None)


def _takes_keyword(func: Callable[..., Any], name: str) -> bool:
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        (p.name == name and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
        or p.kind is p.VAR_KEYWORD
        for p in params
    )


def _failed_step(draft: StepRecord, exc: Exception, outcome: str, since_ns: int) -> StepRecord:
    """The step as it stood when the model's answer failed: what was answered, and why not
    (a model object of the caller's may raise errors without ``answers``)."""
    answers = tuple(getattr(exc, "answers", ()))
    errors = tuple(getattr(exc, "errors", ())) or (str(exc),)
    return replace(
        draft, answers=answers, rejected=errors, outcome=outcome, decide_ms=_ms(since_ns)
    )


class Agent:
    """The decision loop for one phone: an engine to observe, a model to decide, an executor."""

    def __init__(
        self,
        engine: Observer,
        model: Decider,
        executor: Executor,
        config: LoopConfig | None = None,
        *,
        on_step: Callable[[StepRecord], None] | None = None,
    ) -> None:
        self.engine = engine
        self.model = model
        self.executor = executor
        self._takes_coords = _takes_keyword(model.decide, "coords")
        self.config = config or LoopConfig()
        self._on_step = on_step
        last_frame = getattr(engine, "last_frame", None)
        if self.config.marks and not callable(last_frame):
            raise ConfigError(
                f"marks need the frame of each observation: {type(engine).__name__} has no "
                "last_frame() (use perception.Engine, or turn marks off)"
            )
        self._last_frame: Callable[[], Any] | None = last_frame if self.config.marks else None
        self._observed: tuple[Observation | None, Any] = (None, None)
        """The observation :meth:`_observe` returned last and the frame it was fused from."""

    def run(self, task: str) -> Transcript:
        """Work on ``task`` until finish, budget, loop, timeout or a failure."""
        if not task.strip():
            raise ConfigError("the task is empty")
        cfg = self.config
        loops = LoopDetector(window=cfg.loop_window, repeats=cfg.loop_repeats)
        steps: list[StepRecord] = []
        history: list[HistoryItem] = []
        pending: Observation | None = None
        pending_digest: str | None = None  # its content_digest, when the outcome needed it
        unusable = 0
        refused = False  # the last decided action was not sent (its target moved)
        unicode_text = self._unicode_text()
        woke = 0  # screens woken in a row (one that stays off ends the run)

        def stop(
            reason: StopReason, *, answer: str | None = None, error: BaseException | None = None
        ) -> Transcript:
            text = None if error is None else f"{type(error).__name__}: {error}"
            log.info("agent stopped: %s%s", reason.value, f" ({text})" if text else "")
            return Transcript(task=task, steps=tuple(steps), stop=reason, answer=answer, error=text)

        def record(rec: StepRecord) -> None:
            steps.append(rec)
            history.append(HistoryItem(step=rec.step, action=rec.action, outcome=rec.outcome))
            if self._on_step is not None:
                self._on_step(rec)

        for step in range(1, cfg.max_steps + 1):
            deadline = time.monotonic() + cfg.step_timeout_s
            t0 = time.perf_counter_ns()
            try:
                obs = pending if pending is not None else self._observe(deadline, after=False)
            except (StepTimeoutError, DeviceTimeoutError) as exc:
                return stop(StopReason.TIMEOUT, error=exc)
            except PerceptionError as exc:
                return stop(StopReason.ERROR, error=exc)
            digest = pending_digest if pending is not None else None
            pending = pending_digest = None
            page = obs.screen.fingerprint if obs.screen is not None else ""
            draft = StepRecord(
                step=step,
                page=page,
                epoch=obs.epoch,
                state=obs.state.value,
                candidates=len(obs.candidates),
                answers=(),
                rejected=(),
                action=None,
                commands=(),
                outcome="",
                observe_ms=_ms(t0),
                decide_ms=0.0,
                act_ms=0.0,
            )
            if obs.screen is not None and (obs.screen.secure or step == 1 or woke):
                # A black frame: FLAG_SECURE, or a screen that went off while the model thought
                # (the phone's timeout). The phone says which, and whether it is locked (asked
                # at the start and after waking it too: a lock screen is drawn, not black).
                fix = self._power_fix(woke, hand_over=cfg.hand_over)
                if fix is not None:
                    outcome, send = fix
                    if send is None:
                        record(replace(draft, outcome=outcome))
                        return stop(StopReason.HAND_OVER)
                    woke += 1
                    t2 = time.perf_counter_ns()
                    try:
                        command = send()
                        pending = self._observe(deadline, after=True)
                    except (StepTimeoutError, DeviceTimeoutError) as exc:
                        record(replace(draft, outcome=f"{outcome}; no observation after it",
                                       act_ms=_ms(t2)))
                        return stop(StopReason.TIMEOUT, error=exc)
                    except PerceptionError as exc:
                        record(replace(draft, outcome=f"{outcome} failed: {exc}",
                                       act_ms=_ms(t2)))
                        return stop(StopReason.ERROR, error=exc)
                    record(replace(draft, commands=(command,), act_ms=_ms(t2), outcome=outcome))
                    continue
            woke = 0
            if cfg.hand_over:
                handed = next(
                    (o for o in obs.operations if o.kind is OperationKind.HAND_OVER), None
                )
                if handed is not None:
                    record(replace(draft, outcome=f"handed over: {handed.reason}"))
                    return stop(StopReason.HAND_OVER)
            frame = self._observed[1] if self._observed[0] is obs else None
            turn: dict[str, Any] = dict(
                step=step,
                steps_left=cfg.max_steps - step,
                history_steps=cfg.history_steps,
                coords=cfg.coords,
                unicode_text=unicode_text,
            )
            if frame is not None:
                try:
                    messages = build_messages(
                        obs, task, history, frame=frame, max_side_px=cfg.marks_max_side_px,
                        **turn,
                    )
                except FrameError as exc:
                    log.warning("step %d: no marked screenshot (%s): text only", step, exc)
                    frame = None
            elif cfg.marks:
                log.info("step %d: the observation has no frame: text only", step)
            if frame is None:
                messages = build_messages(obs, task, history, **turn)
            if cfg.marks:
                draft = replace(draft, images=0 if frame is None else 1)
            t1 = time.perf_counter_ns()
            try:
                # coords and unicode_text are passed only when not the default: deciders
                # written before them keep working.
                decision = self.model.decide(
                    messages,
                    obs,
                    timeout_s=max(0.001, deadline - time.monotonic()),
                    **({} if cfg.coords or not self._takes_coords else {"coords": False}),
                    **({"unicode_text": True} if unicode_text else {}),
                )
                if not cfg.coords and _by_grid_point(decision.action):
                    # A decider that takes no ``coords`` validated with grid points allowed.
                    raise ActionSchemaError(
                        "this screen shows no positions: act on an id (tap_at and swipe from/to "
                        "are not offered)"
                    )
            except (ActionError, LLMTimeoutError, LLMUnavailableError) as exc:
                # A rejected answer (UnusableAnswerError is an ActionError; a model object of
                # the caller's may raise parse_action's errors as they come), a slow reply, or
                # a server rate-limited or failing through its retries (a burst of 429s must not
                # end a run with time left): the next step observes again and asks again.
                timed_out = isinstance(exc, LLMTimeoutError)
                unavailable = isinstance(exc, LLMUnavailableError)
                rejected = getattr(exc, "errors", ())
                last = rejected[-1] if rejected and not (timed_out or unavailable) else str(exc)
                why = (
                    f"model timeout: {last}" if timed_out
                    else f"model unavailable: {last}" if unavailable
                    else f"rejected: {last}"
                )
                record(_failed_step(draft, exc, why, t1))
                unusable += 1
                if unusable >= cfg.max_unusable_steps:
                    if timed_out:
                        return stop(StopReason.TIMEOUT, error=exc)
                    if unavailable:
                        return stop(StopReason.ERROR, error=exc)
                    return stop(
                        StopReason.ERROR,
                        error=LLMError(
                            f"no usable answer in {unusable} steps in a row; last: {last}"
                        ),
                    )
                continue
            except Exception as exc:  # noqa: BLE001 - the caller's model may raise anything
                # The step is recorded (page, state, epoch, what was answered) before stopping.
                record(_failed_step(draft, exc, f"model error: {exc}", t1))
                return stop(StopReason.ERROR, error=exc)
            unusable = 0
            action = decision.action
            draft = replace(
                draft,
                answers=decision.answers,
                rejected=decision.errors,
                action=action,
                decide_ms=_ms(t1),
                prompt_tokens=decision.prompt_tokens,
                completion_tokens=decision.completion_tokens,
            )
            if isinstance(action, Finish):
                if not getattr(action, "done", True):
                    record(replace(draft, outcome="gave up: the task cannot be done"))
                    return stop(StopReason.GAVE_UP, answer=action.answer)
                record(replace(draft, outcome="finished"))
                return stop(StopReason.FINISHED, answer=action.answer)
            # At most one refusal in a row: a screen that changes on its own all the time (an
            # animation under the target) must not keep every action from the phone.
            moved = (
                self._moved_while_deciding(action, obs)
                if cfg.recheck_target and not refused else None
            )
            if moved is not None:
                refused = True
                record(replace(draft, outcome=f"not sent: {moved}"))
                continue
            refused = False
            # A loop is the same action on the same content: a keypad digit that changes the
            # display, or a swipe that moves a feed, is progress on the same page.
            if digest is None:
                digest = content_digest(obs)
            key = f"{page}|{digest}|{json.dumps(action.to_json(), sort_keys=True)}"
            report = None if isinstance(action, Wait) else loops.observe(key)
            if report is not None:
                record(
                    replace(
                        draft,
                        outcome=f"not sent: chosen {report.count} times on this unchanged screen "
                        f"within {report.window} steps",
                    )
                )
                return stop(StopReason.LOOP)
            t2 = time.perf_counter_ns()
            try:
                done = self.executor.execute(action, obs)
            except ExecutionError as exc:
                if exc.sent:
                    # Part of it reached the phone: what is observed next must postdate it.
                    self.engine.mark_action()
                record(
                    replace(draft, commands=exc.sent, outcome=f"failed: {exc}", act_ms=_ms(t2))
                )
                continue
            except PerceptionError as exc:
                record(replace(draft, outcome=f"failed: {exc}", act_ms=_ms(t2)))
                return stop(StopReason.ERROR, error=exc)
            draft = replace(draft, commands=done.commands)
            if cfg.settle_ms:
                time.sleep(min(cfg.settle_ms / 1000, max(0.0, deadline - time.monotonic())))
            try:
                pending = self._observe(deadline, after=True)
            except (StepTimeoutError, DeviceTimeoutError) as exc:
                record(replace(draft, outcome="sent; no observation after it", act_ms=_ms(t2)))
                return stop(StopReason.TIMEOUT, error=exc)
            except PerceptionError as exc:
                record(replace(draft, outcome="sent; no observation after it", act_ms=_ms(t2)))
                return stop(StopReason.ERROR, error=exc)
            change, pending_digest = screen_change(obs, digest, pending)
            outcome = change.value
            if isinstance(action, Type) and not typed_into_a_field(action, obs, pending):
                outcome += f"; {NOT_TYPED}"
            record(replace(draft, outcome=outcome, act_ms=_ms(t2)))
        return stop(StopReason.BUDGET)

    def _power_fix(
        self, tries: int, *, hand_over: bool
    ) -> tuple[str, Callable[[], str] | None] | None:
        """What the phone's power state asks for: ``(outcome, send)`` to wake it or open a
        lock screen that asks for nothing (a swipe), ``(outcome, None)`` to hand the run over
        (a PIN, or a screen still off after ``MAX_WAKES`` tries), None to go on (on and
        unlocked, or a phone or sink that cannot say)."""
        try:
            power = self.executor.power_state()
        except PerceptionError as exc:
            log.warning("cannot ask the phone whether its screen is on: %s", exc)
            return None
        if power is None:
            return None
        if not power.awake:
            if tries >= MAX_WAKES:
                return "the screen stays off after waking it", None
            return "the screen was off: woke it", self.executor.wake
        if not power.locked:
            return None
        if power.secure_lock is False and tries < MAX_WAKES:
            return "the lock screen was up (no PIN): opened it", self.executor.unlock
        if hand_over:
            return "handed over: the phone is locked (a person must unlock it)", None
        return None

    def _unicode_text(self) -> bool:
        """Can the phone type any text (ADB Keyboard is its input method), asked once a run:
        the prompt and the validator allow printable ASCII only otherwise. A phone that does
        not answer counts as ASCII-only; the first observation reports it. So does a model
        object whose ``decide`` takes no ``unicode_text`` (written before it): its validator
        would refuse what the prompt offered."""
        if not _takes_keyword(self.model.decide, "unicode_text"):
            return False
        try:
            return self.executor.unicode_text
        except PerceptionError as exc:
            log.warning("cannot ask the phone for its input method: %s", exc)
            return False

    def _moved_while_deciding(self, action: Action, obs: Observation) -> str | None:
        """Why the action's tap would not land on what the model saw there, on the newest
        observation fused since ``obs`` (:attr:`LoopConfig.recheck_target`): the point the
        executor taps (an element's centre, or the grid point) now lies on another element, or
        on none. None when it lands as seen, when the action taps no point, or when no newer
        observation of the same kind is in: a frame-only observation (the dump failed, as it
        often does on an animated screen) reads the same screen as OCR and icons, which never
        match the tree's elements, and refusing on that alone sent nothing on such screens.
        Where both have a tree, only the tree's candidates are compared (the arbiter's state,
        and with it the pixel candidates, may differ; a newer tree that disagrees with its own
        frame still shows where the screen went)."""
        peek = getattr(self.engine, "peek", None)
        if peek is None or obs.screen is None:
            return None
        match action:
            case Tap(candidate_id=cid) | LongPress(candidate_id=cid) | Type(candidate_id=cid) if (
                cid is not None
            ):
                try:
                    point = self.executor.candidate_point(obs, cid)
                except (ExecutionError, KeyError):
                    return None
            case SetSlider(candidate_id=cid, value=value):
                try:
                    point = self.executor.slider_point(obs, cid, value)
                except (ExecutionError, KeyError):
                    return None
            case TapAt(point_pm=pm):
                point = point_pm_to_px(pm, obs.screen.size)
            case _:
                return None
        now: Observation | None = peek()
        if now is None or now is obs or not now.ready:
            return None
        trees = [_has_tree(o) for o in (obs, now)]
        if trees[0] != trees[1]:
            return None  # a tree against a frame alone: their candidates never match
        if now.screen is None or now.screen.size != obs.screen.size:
            return "the screen turned while the model decided; asking again on the new screen"
        # A newer tree its own frame calls another moment's, where the model's agreed with its
        # frame: an old dump over the new picture (the tree is captured less often, and more
        # slowly, than the frame). The pixels say where the screen went, not that tree.
        elsewhen = trees[0] and now.consistent is False and obs.consistent is not False
        was = _under(obs, point, tree=trees[0])
        there = _under(now, point, tree=trees[0] and not elsewhen, listed=elsewhen)
        if was is None and there is None:
            return None
        if (
            was is not None
            and there is not None
            and _same_element(was, there, kind=not elsewhen)
        ):
            return None
        seen = "nothing" if was is None else repr(was.text or was.kind)
        found = "nothing" if there is None else repr(there.text or there.kind)
        if elsewhen:
            found += " on the pixels (the newest dump is older than the frame)"
        return (
            f"the screen changed while the model decided: where it taps was {seen}, now "
            f"{found}; asking again on the new screen"
        )

    def _observe(self, deadline: float, *, after: bool) -> Observation:
        """The next ready observation (built from post-action data with ``after``), in time.

        After an action the barrier is set explicitly (:meth:`perception.Engine.mark_action`):
        every observation returned from then on is built from data captured after it.
        """
        if after:
            self.engine.mark_action()
        rechecks = self.config.recheck_inconsistent
        loading = self.config.loading_waits
        held: Observation | None = None  # a ready observation whose tree and pixels disagree
        held_frame: Any = None  # and its frame
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if held is not None:
                    self._observed = (held, held_frame)
                    return held
                raise StepTimeoutError(
                    f"no usable observation within the step deadline "
                    f"({self.config.step_timeout_s:.1f} s)"
                )
            try:
                obs: Observation = self.engine.observe(timeout_s=remaining)
            except DeviceTimeoutError:
                if held is not None:
                    # No fresher observation in time: the one in hand, warning and all.
                    self._observed = (held, held_frame)
                    return held
                raise
            # Asked at once, before any other observe(): the frame of this observation.
            frame = self._last_frame() if self._last_frame is not None else None
            if obs.ready:
                if obs.consistent is False and rechecks > 0:
                    rechecks -= 1
                    held = obs
                    held_frame = frame
                    log.info("tree and pixels disagree (%s): observing again", "; ".join(obs.notes))
                    continue
                wait = next((o for o in obs.operations if o.kind is OperationKind.WAIT), None)
                if wait is not None and loading > 0:
                    loading -= 1
                    held = obs
                    held_frame = frame
                    pause = min(self.config.loading_wait_ms / 1000, deadline - time.monotonic())
                    log.info(
                        "the screen is loading (%s): waiting %d ms, then observing again",
                        wait.reason, max(0, round(pause * 1000)),
                    )
                    if pause > 0:
                        time.sleep(pause)
                    continue
                self._observed = (obs, frame)
                return obs
            log.info("observation not ready (%s): observing again", sorted(obs.refresh))
