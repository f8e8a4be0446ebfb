"""The action space: a tagged union of frozen records, and the parser that validates model output.

The model answers with ONE JSON object (a ```json fence and prose around it are tolerated)::

    {"action": "tap", "id": 7}
    {"action": "tap_at", "x": 500, "y": 120}              # 0-1000 grid, origin top-left
    {"action": "long_press", "id": 7}
    {"action": "swipe", "direction": "up"}                # the way the finger moves;
    {"action": "swipe", "direction": "up", "id": 6}       #   optionally inside a scrollable
    {"action": "swipe", "from": [500, 800], "to": [500, 200]}
    {"action": "set", "id": 3, "value": 0.5}              # a slider: 0 its minimum, 1 its maximum
    {"action": "type", "text": "hello", "id": 5}          # id optional: the focused field;
                                                          #   "append": true keeps its text
    {"action": "key", "key": "back"}                      # back, home, enter, recents, ...
    {"action": "open_app", "app": "com.android.settings"}  # or a name: "settings"
    {"action": "wait", "ms": 1000}
    {"action": "finish", "answer": "..."}                 # "done": false: it cannot be done

Every object may carry a short ``"reason"`` string (ignored). :func:`parse_action` checks the
answer against the :class:`~perception.pipeline.Observation` it was given for: a candidate id
must exist on that screen and be tappable (not occluded, not disabled, not static text),
``set`` takes a slider and a fraction from 0 to 1, points must lie on the grid, text is
bounded (typed text printable ASCII unless the phone can type any text: ``unicode_text``; no
control characters in text or answer), keys come from :class:`KeyName`. Everything else
raises a subclass of :class:`ActionError` whose message says what was wrong, in words that
never quote the screen's text (screen text is data and must not travel back to the model as
part of an instruction).
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from perception.errors import PerceptionError
from perception.fusion.arbiter import ArbiterState
from perception.fusion.candidates import Candidate
from perception.pipeline import Observation
from perception.types import FOCUSED_FIELD, Channel, ElementFlag, PointPm

GRID_MAX_PM = 1000
MAX_TEXT_CHARS = 500
"""Longest text a ``type`` action may enter."""
MAX_ANSWER_CHARS = 2000
MAX_REASON_CHARS = 500
MAX_WAIT_MS = 10_000
SLIDER_KIND = "slider"
"""The candidate kind ``set`` acts on (a SeekBar, a settable RatingBar: see
:mod:`perception.tree.clean`)."""
MAX_APP_CHARS = 200
"""Longest app name or package an ``open_app`` action may carry."""
MAX_MODEL_TEXT_CHARS = 20_000
"""Longer model output is refused before any JSON scanning."""
_MAX_SCAN_STARTS = 64
"""At most this many ``{`` positions are tried as the start of a JSON object; an answer with
more is refused (past them a second action could hide unseen)."""
_OBJECT_START = re.compile(r"""\{\s*(?:["']|[A-Za-z_][\w-]*\s*:)""")
"""A ``{`` that a key follows: meant as an object (valid or not), not a brace of prose."""
_NEST_TOKENS = re.compile(r'\\[\\"]|["{}\[\]]|,(?=\s*[}\]])')
"""What a broken object's nesting is read from: quotes (an escaped one is no quote), braces,
brackets, and commas that only a closing brace or bracket follows. Only ``\\\\`` and ``\\"``
are escapes here: a ``{`` is always a token of its own, so one reading of the answer serves
every ``{`` the scan starts at."""
_FENCED = re.compile(r"\A```[A-Za-z]*\s*(.*?)\s*```\Z", re.DOTALL)
"""An answer that is one fenced block, and nothing around it."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CONTROL_BUT_LINES = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""What an answer for the user may not hold: its lines and tabs are text, not keys."""
_CONTROL_BUT_NEWLINE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")
"""What typed text may not hold where the phone types any text: a line break is text there
(a chat's multi-line message; enter would send it), a tab is not (it moves the focus)."""
_REASONING = re.compile(r"\A\s*<(think|thinking)>.*?</\1>", re.DOTALL)
"""A reasoning model's thoughts ahead of its answer, which may quote candidate actions."""
_OPEN_THOUGHT = re.compile(r"\A\s*<(think|thinking)>")
"""C0, DEL and C1 controls (ESC, CSI \\x9b): refused in typed text and in the finish answer."""
_TAPPABLE = (
    ElementFlag.CLICKABLE | ElementFlag.CHECKABLE | ElementFlag.EDITABLE | ElementFlag.SCROLLABLE
)
"""A tree candidate with one of these takes a tap (long-clickable alone: a long press only)."""


class ActionError(PerceptionError, ValueError):
    """The model's answer is not a valid action for the observation it was given."""


class ActionSyntaxError(ActionError):
    """The answer does not contain exactly one JSON object."""


class ActionSchemaError(ActionError):
    """The JSON object is not an action: unknown kind, missing or unexpected fields, bad values."""


class ActionTargetError(ActionError):
    """The candidate id is unknown on this screen, or the candidate cannot take this action."""


@enum.unique
class ActionKind(enum.StrEnum):
    TAP = "tap"
    TAP_AT = "tap_at"
    LONG_PRESS = "long_press"
    SWIPE = "swipe"
    SET = "set"
    TYPE = "type"
    KEY = "key"
    OPEN_APP = "open_app"
    WAIT = "wait"
    FINISH = "finish"


@enum.unique
class Direction(enum.StrEnum):
    """The way the finger moves: ``up`` reveals what is below."""

    UP = "up"
    DOWN = "down"
    LEFT = "left"
    RIGHT = "right"


@enum.unique
class KeyName(enum.StrEnum):
    """The keys a model may press (a closed set)."""

    BACK = "back"
    HOME = "home"
    ENTER = "enter"
    RECENTS = "recents"
    DELETE = "delete"
    TAB = "tab"
    SEARCH = "search"

    @property
    def keycode(self) -> str:
        """The Android key code name (``input keyevent KEYCODE_BACK``)."""
        return _KEYCODES[self]


_KEYCODES: Mapping[KeyName, str] = {
    KeyName.BACK: "KEYCODE_BACK",
    KeyName.HOME: "KEYCODE_HOME",
    KeyName.ENTER: "KEYCODE_ENTER",
    KeyName.RECENTS: "KEYCODE_APP_SWITCH",
    KeyName.DELETE: "KEYCODE_DEL",
    KeyName.TAB: "KEYCODE_TAB",
    KeyName.SEARCH: "KEYCODE_SEARCH",
}


@dataclass(frozen=True, slots=True)
class Tap:
    candidate_id: int
    kind: ClassVar[ActionKind] = ActionKind.TAP

    def to_json(self) -> dict[str, Any]:
        return {"action": self.kind.value, "id": self.candidate_id}


@dataclass(frozen=True, slots=True)
class TapAt:
    point_pm: PointPm
    kind: ClassVar[ActionKind] = ActionKind.TAP_AT

    def to_json(self) -> dict[str, Any]:
        return {"action": self.kind.value, "x": self.point_pm.x, "y": self.point_pm.y}


@dataclass(frozen=True, slots=True)
class LongPress:
    candidate_id: int
    kind: ClassVar[ActionKind] = ActionKind.LONG_PRESS

    def to_json(self) -> dict[str, Any]:
        return {"action": self.kind.value, "id": self.candidate_id}


@dataclass(frozen=True, slots=True, kw_only=True)
class Swipe:
    """Either a ``direction`` (optionally inside ``candidate_id``) or ``start_pm`` -> ``end_pm``."""

    direction: Direction | None = None
    candidate_id: int | None = None
    start_pm: PointPm | None = None
    end_pm: PointPm | None = None
    kind: ClassVar[ActionKind] = ActionKind.SWIPE

    def __post_init__(self) -> None:
        by_direction = self.direction is not None
        by_points = self.start_pm is not None and self.end_pm is not None
        if by_direction == by_points or (not by_points and (self.start_pm or self.end_pm)):
            raise ActionSchemaError("swipe takes either a direction or both from and to points")
        if by_points and self.candidate_id is not None:
            raise ActionSchemaError("swipe with from/to points takes no id")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"action": self.kind.value}
        if self.direction is not None:
            out["direction"] = self.direction.value
            if self.candidate_id is not None:
                out["id"] = self.candidate_id
        else:
            assert self.start_pm is not None and self.end_pm is not None
            out["from"] = list(self.start_pm)
            out["to"] = list(self.end_pm)
        return out


@dataclass(frozen=True, slots=True)
class SetSlider:
    """Move slider ``candidate_id`` to ``value``: 0 its minimum, 1 its maximum (the executor
    taps that point of its track, where Android's SeekBar and RatingBar jump to)."""

    candidate_id: int
    value: float
    kind: ClassVar[ActionKind] = ActionKind.SET

    def __post_init__(self) -> None:
        if not 0.0 <= self.value <= 1.0:  # NaN fails too
            raise ActionSchemaError(f"a slider's value is from 0 to 1, got {self.value}")

    def to_json(self) -> dict[str, Any]:
        return {"action": self.kind.value, "id": self.candidate_id, "value": self.value}


@dataclass(frozen=True, slots=True)
class Type:
    """Enter ``text`` into ``candidate_id`` (tapped first), or into the focused field: the
    field then holds ``text`` (what it held is deleted first), or with ``append`` what it held
    followed by ``text``."""

    text: str
    candidate_id: int | None = None
    append: bool = False
    kind: ClassVar[ActionKind] = ActionKind.TYPE

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"action": self.kind.value, "text": self.text}
        if self.candidate_id is not None:
            out["id"] = self.candidate_id
        if self.append:
            out["append"] = True
        return out


@dataclass(frozen=True, slots=True)
class Key:
    name: KeyName
    kind: ClassVar[ActionKind] = ActionKind.KEY

    def to_json(self) -> dict[str, Any]:
        return {"action": self.kind.value, "key": self.name.value}


@dataclass(frozen=True, slots=True)
class OpenApp:
    """Start an app as its launcher icon would (an app already running comes back where it
    was): ``app`` is its package (``com.android.settings``) or a name the package spells
    (``settings``); the executor matches it against the apps the phone's launcher shows."""

    app: str
    kind: ClassVar[ActionKind] = ActionKind.OPEN_APP

    def to_json(self) -> dict[str, Any]:
        return {"action": self.kind.value, "app": self.app}


@dataclass(frozen=True, slots=True)
class Wait:
    duration_ms: int
    kind: ClassVar[ActionKind] = ActionKind.WAIT

    def to_json(self) -> dict[str, Any]:
        return {"action": self.kind.value, "ms": self.duration_ms}


@dataclass(frozen=True, slots=True)
class Finish:
    """The run ends with ``answer`` for the user; ``done`` False: the task cannot be done (the
    loop then stops as given up, not finished, so a caller can tell the two apart)."""

    answer: str
    done: bool = True
    kind: ClassVar[ActionKind] = ActionKind.FINISH

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"action": self.kind.value, "answer": self.answer}
        if not self.done:
            out["done"] = False
        return out


Action = Tap | TapAt | LongPress | Swipe | SetSlider | Type | Key | OpenApp | Wait | Finish

_FIELDS: Mapping[ActionKind, tuple[frozenset[str], frozenset[str]]] = {
    # kind: (required, optional); "action" and "reason" are always allowed
    ActionKind.TAP: (frozenset({"id"}), frozenset()),
    ActionKind.TAP_AT: (frozenset({"x", "y"}), frozenset()),
    ActionKind.LONG_PRESS: (frozenset({"id"}), frozenset()),
    ActionKind.SWIPE: (frozenset(), frozenset({"direction", "id", "from", "to"})),
    ActionKind.SET: (frozenset({"id", "value"}), frozenset()),
    ActionKind.TYPE: (frozenset({"text"}), frozenset({"id", "append"})),
    ActionKind.KEY: (frozenset({"key"}), frozenset()),
    ActionKind.OPEN_APP: (frozenset({"app"}), frozenset()),
    ActionKind.WAIT: (frozenset({"ms"}), frozenset()),
    ActionKind.FINISH: (frozenset({"answer"}), frozenset({"done"})),
}


# ----- extraction -----------------------------------------------------------------------------


def extract_json_object(model_text: str) -> dict[str, Any]:
    """The one JSON object in ``model_text`` (a ```json fence around it is just text).

    Prose around the object is ignored, and so is a reasoning model's ``<think>...</think>``
    block ahead of it (its thoughts may quote other actions). Raises :class:`ActionSyntaxError`
    for several different objects (inside fences or not), none, one that is not valid JSON, an
    object found inside one that is not valid JSON (which of them was meant?), a key given twice
    with different values (json would keep the last silently), or more ``{`` than the scan tries.
    Identical repeats count as one, and an empty object is no action (it is the answer only
    where nothing else is). Where the whole answer is one object (in a fence or not), trailing
    commas in it are forgiven: small models write them, and no second object can hide there.
    Elsewhere an object with trailing commas is not the action, but it is an object: beside a
    different one, the answer is ambiguous.
    """
    if not isinstance(model_text, str):
        raise ActionSyntaxError(f"the answer must be text, got {type(model_text).__name__}")
    if len(model_text) > MAX_MODEL_TEXT_CHARS:
        raise ActionSyntaxError(
            f"the answer is {len(model_text)} characters long; answer with one short JSON object"
        )
    if not model_text.strip():
        raise ActionSyntaxError("the answer is empty; answer with one JSON object")
    model_text = _REASONING.sub("", model_text, count=1)
    if _OPEN_THOUGHT.match(model_text):
        raise ActionSyntaxError(
            "the answer ends inside its <think> block; close it and answer with one JSON object"
        )
    whole = _whole_answer_object(model_text)
    if whole is not None:
        return whole
    # The whole answer is scanned, fences and prose alike: an object outside a fence counts as
    # much as one inside (two different actions anywhere are ambiguous, wherever they stand).
    valid, lenient = _scan_objects(model_text)
    actions = _distinct(obj for obj in valid if obj)
    if not actions:
        if not lenient and valid:
            return {}  # only empty objects: action_from_json says what the object lacks
        if "{" in model_text:
            raise ActionSyntaxError(
                "the answer holds no valid JSON object (check quotes, commas and braces)"
            )
        raise ActionSyntaxError("the answer contains no JSON object; answer with one JSON object")
    different = len(_distinct([*actions, *lenient]))
    if different > 1:
        raise ActionSyntaxError(
            f"the answer contains {different} different JSON objects; answer with exactly one"
        )
    return actions[0]


def _canonical(value: Any) -> str:
    """``value`` as JSON text with sorted keys: equal only where the model wrote the same values
    (``1``, ``1.0`` and ``true`` are equal in Python, not in the answer)."""
    return json.dumps(value, sort_keys=True)


def _distinct(objects: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """``objects`` without repeats, the first of each kept."""
    seen: dict[str, dict[str, Any]] = {}
    for obj in objects:
        seen.setdefault(_canonical(obj), obj)
    return list(seen.values())


class _DuplicateKey(Exception):
    """A key given twice in one JSON object (not a ValueError: no decoding error to skip)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook``: a dict, or :class:`_DuplicateKey` where a key comes back with a
    different value (json would keep the last silently). The same value twice has one meaning,
    as an object repeated whole does: it is kept once."""
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj and _canonical(obj[key]) != _canonical(value):
            raise _DuplicateKey(key)
        obj[key] = value
    return obj


def _duplicate_key_error(exc: _DuplicateKey) -> ActionSyntaxError:
    return ActionSyntaxError(
        f"the JSON object gives the key {_short(exc.key)} twice, with different values; give "
        "each field once"
    )


def _whole_answer_object(text: str) -> dict[str, Any] | None:
    """The answer's object where the whole answer (in a fence or not) is that one object, with
    trailing commas forgiven; None where it is anything else (then the answer is scanned)."""
    body = text.strip()
    fenced = _FENCED.match(body)
    if fenced:
        body = fenced.group(1)
    if not (body.startswith("{") and body.endswith("}")):
        return None
    decoder = json.JSONDecoder(object_pairs_hook=_unique_keys)
    try:
        return _Nesting(body).object_at(decoder, 0, len(body))
    except _DuplicateKey as exc:
        raise _duplicate_key_error(exc) from None


def _decoded_object(decoder: json.JSONDecoder, text: str) -> tuple[bool, dict[str, Any] | None]:
    """Whether ``text`` is one JSON value, and that value where it is an object."""
    try:
        value = decoder.decode(text)
    except (ValueError, RecursionError):
        # JSONDecodeError, and what the model's text can make json raise besides: an int over
        # Python's 4,300 digits (ValueError), arrays nested past the recursion limit
        # (RecursionError). Each is a reply to repair, never the run's end.
        return False, None
    return True, value if isinstance(value, dict) else None


class _Nesting:
    """How the answer's braces and brackets nest, read in one pass for every ``{`` the scan
    starts at (a walk from each start would make 64 starts in 20,000 characters take a second).

    Whether a brace lies in a string depends on where the reading starts: a start with an even
    number of quotes before it sees the text as one "view", a start with an odd number as the
    other. Each view keeps its own stacks, and its own trailing commas, blanked in its lenient
    text (a space: every position stays where it was)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.view_of: dict[int, int] = {}  # a '{' -> the view it lies outside strings in
        self.brace_end: dict[int, int] = {}  # a '{' -> the end of its '}' (braces alone)
        self.broken: set[int] = set()  # a '{' or '[' met by a wrong closer before its own
        # per view, what is still open at the end: (position, its closer), outermost first
        self.open: tuple[list[tuple[int, str]], list[tuple[int, str]]] = ([], [])
        self.last_end = [0, 0]  # per view: the end of the last token outside strings
        self.commas: tuple[list[int], list[int]] = ([], [])
        self._lenient: list[str | None] = [None, None]
        braces: tuple[list[int], list[int]] = ([], [])
        quotes = 0
        for match in _NEST_TOKENS.finditer(text):
            token, pos = match.group(), match.start()
            if token == '"':
                quotes ^= 1
                self.last_end[quotes] = match.end()  # the quote that ends a string in that view
                continue
            if token[0] == "\\":
                continue
            view = quotes
            if token == ",":
                self.commas[view].append(pos)
                continue
            self.last_end[view] = match.end()
            stack = self.open[view]
            if token in "{[":
                stack.append((pos, "}" if token == "{" else "]"))
                if token == "{":
                    self.view_of[pos] = view
                    braces[view].append(pos)
                continue
            if token == "}" and braces[view]:
                self.brace_end[braces[view].pop()] = match.end()
            if stack and stack[-1][1] == token:
                stack.pop()
            else:  # every start still open meets a closer that is not its own: not JSON cut short
                self.broken.update(p for p, _ in stack)
                stack.clear()
        self.quotes_at_end = quotes
        # per view: where each still open '{' or '[' stands in it, and what closes them all
        self.depth_of = [{pos: depth for depth, (pos, _) in enumerate(o)} for o in self.open]
        self.closers = ["".join(closer for _, closer in reversed(o)) for o in self.open]

    def span_end(self, start: int) -> int | None:
        """Where the object opened at ``start`` closes (strings skipped), or None if it never
        does."""
        return self.brace_end.get(start)

    def lenient(self, view: int) -> str:
        """The text with the trailing commas of ``view`` blanked."""
        cached = self._lenient[view]
        if cached is None:
            chars = list(self.text)
            for pos in self.commas[view]:
                chars[pos] = " "
            cached = self._lenient[view] = "".join(chars)
        return cached

    def object_at(
        self, decoder: json.JSONDecoder, start: int, end: int, closing: str = ""
    ) -> dict[str, Any] | None:
        """``text[start:end] + closing`` as one JSON object, trailing commas forgiven, or None.
        Raises :class:`_DuplicateKey` for a key given twice with different values."""
        valid, value = _decoded_object(decoder, self.text[start:end] + closing)
        view = self.view_of.get(start, 0)
        if valid or not (closing or self.commas[view]):
            return value
        lenient = self.lenient(view)[start:end].rstrip()
        if closing:
            lenient = lenient.removesuffix(",")  # it stood before what closing adds
        return _decoded_object(decoder, lenient + closing)[1]

    def truncated(self, decoder: json.JSONDecoder, start: int) -> bool:
        """Whether the object opened at ``start``, which never closes, is JSON cut short: closing
        its open braces and brackets (after its last one, after the line that ends, or at the
        answer's end less a fence) makes it valid. Then what follows its start lies inside it (an
        if_fails or plan of the action meant); otherwise its ``{`` is prose or an abandoned
        attempt, and an object after it is the model's answer."""
        view = self.view_of.get(start)
        if view is None or start in self.broken or self.quotes_at_end != view:
            return False  # (or it ends inside a string)
        depth = self.depth_of[view].get(start)
        if depth is None:
            return False
        closing = self.closers[view][: len(self.open[view]) - depth]
        last = self.last_end[view]
        line_end = self.text.find("\n", last)
        whole = len(self.text.rstrip().removesuffix("```").rstrip())
        for end in dict.fromkeys((last, len(self.text) if line_end < 0 else line_end, whole)):
            try:
                if end > start and self.object_at(decoder, start, end, closing) is not None:
                    return True
            except _DuplicateKey:
                return True  # an object all the same
        return False


def _scan_objects(text: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every JSON object of ``text``, outside one another, and apart from them every object that
    is JSON once its trailing commas go (not the action, but a second object beside one). A
    non-empty object inside one meant as an object (a key follows its ``{``) that does not parse
    raises: it may be the broken one's ``if_fails`` or ``plan``, not the action. So does a ``{``
    past the scan's limit."""
    decoder = json.JSONDecoder(object_pairs_hook=_unique_keys)
    valid: list[dict[str, Any]] = []
    lenient: list[dict[str, Any]] = []
    broken_end = -1  # where the last broken object ends that holds what follows its start
    nesting: _Nesting | None = None  # read at the first broken object
    start = text.find("{")
    tries = 0
    while start >= 0:
        if tries == _MAX_SCAN_STARTS:
            raise ActionSyntaxError(
                f"the answer holds more than {_MAX_SCAN_STARTS} '{{'; answer with one JSON "
                "object and little else"
            )
        tries += 1
        try:
            value, end = decoder.raw_decode(text, start)
        except _DuplicateKey as exc:
            raise _duplicate_key_error(exc) from None
        except (ValueError, RecursionError):
            # JSONDecodeError, and what the model's text can make json raise besides: an int
            # over Python's 4,300 digits (ValueError), arrays nested past the recursion limit
            # (RecursionError). Each is a reply to repair, never the run's end.
            if start >= broken_end and _OBJECT_START.match(text, start):
                nesting = nesting or _Nesting(text)
                span_end = nesting.span_end(start)
                if span_end is None:
                    # A '{' of prose never closes, nor does an object cut short: only the
                    # latter holds what follows it.
                    if nesting.truncated(decoder, start):
                        broken_end = len(text)
                else:
                    try:
                        loose = nesting.object_at(decoder, start, span_end)
                    except _DuplicateKey as exc:
                        raise _duplicate_key_error(exc) from None
                    if loose is not None:
                        lenient.append(loose)  # and not valid JSON: what it holds is not the action
                    broken_end = span_end
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            if value and start < broken_end:
                raise ActionSyntaxError(
                    "the answer holds a JSON object inside another that is not valid JSON "
                    "(check quotes, commas and braces); answer with exactly one object"
                )
            valid.append(value)
        start = text.find("{", end)
    return valid, lenient


# ----- validation -----------------------------------------------------------------------------


def parse_action(
    model_text: str, observation: Observation, *, coords: bool = True, unicode_text: bool = False
) -> Action:
    """Extract the one JSON action from ``model_text`` and validate it against ``observation``.

    ``coords=False`` (the id-only prompt, which shows no positions) refuses grid points: ``tap_at``
    and a swipe ``from``/``to``. ``unicode_text=True`` (a phone whose input method types any
    text: ADB Keyboard) lets ``type`` carry any printable text; otherwise printable ASCII, all
    that ``adb shell input text`` types."""
    return action_from_json(
        extract_json_object(model_text), observation, coords=coords, unicode_text=unicode_text
    )


def action_from_json(
    obj: Mapping[str, Any],
    observation: Observation,
    *,
    coords: bool = True,
    unicode_text: bool = False,
) -> Action:
    """Validate a decoded JSON object as an action on ``observation``."""
    if "action" not in obj:
        raise ActionSchemaError(
            'the JSON object has no "action" field; use one of: '
            + ", ".join(k.value for k in ActionKind)
        )
    raw_kind = obj["action"]
    if not isinstance(raw_kind, str):
        raise ActionSchemaError('"action" must be a string')
    try:
        kind = ActionKind(raw_kind.strip().lower())
    except ValueError:
        raise ActionSchemaError(
            f"unknown action {_short(raw_kind)}; use one of: "
            + ", ".join(k.value for k in ActionKind)
        ) from None
    required, optional = _FIELDS[kind]
    allowed = required | optional | {"action", "reason"}
    extra = sorted(str(k) for k in obj if k not in allowed)
    if extra:
        raise ActionSchemaError(
            f"unexpected field(s) {', '.join(map(_short, extra))} for {kind.value}; "
            f"allowed: {', '.join(sorted(allowed - {'action'}))}"
        )
    missing = sorted(required - obj.keys())
    if missing:
        raise ActionSchemaError(f"{kind.value} needs the field(s) {', '.join(missing)}")
    by_point = kind is ActionKind.TAP_AT or (
        kind is ActionKind.SWIPE and ("from" in obj or "to" in obj)
    )
    if by_point and not coords:
        raise ActionSchemaError(
            f"{kind.value} by grid point is not available (the screen shows no positions); act on "
            "an id, or swipe by direction"
        )
    reason = obj.get("reason")
    if reason is not None and (not isinstance(reason, str) or len(reason) > MAX_REASON_CHARS):
        raise ActionSchemaError(f'"reason" must be a string of at most {MAX_REASON_CHARS} chars')
    match kind:
        case ActionKind.TAP:
            cid = _int(obj, "id")
            _target(observation, cid, kind, coords=coords)
            return Tap(cid)
        case ActionKind.TAP_AT:
            return TapAt(PointPm(_grid(obj, "x"), _grid(obj, "y")))
        case ActionKind.LONG_PRESS:
            cid = _int(obj, "id")
            _target(observation, cid, kind)
            return LongPress(cid)
        case ActionKind.SWIPE:
            return _swipe(obj, observation)
        case ActionKind.SET:
            cid = _int(obj, "id")
            value = _fraction(obj, "value")
            _target(observation, cid, kind)
            return SetSlider(cid, value)
        case ActionKind.TYPE:
            text = _text(obj, "text", MAX_TEXT_CHARS, allow_empty=False, lines=unicode_text)
            _typeable_here(text, unicode_text)
            field_id = None if obj.get("id") is None else _int(obj, "id")
            append = obj.get("append", False)
            if not isinstance(append, bool):
                raise ActionSchemaError('"append" must be true or false')
            if field_id is not None:
                _target(observation, field_id, kind)
            else:
                _focused_field(observation)
            return Type(text, field_id, append)
        case ActionKind.KEY:
            raw = obj["key"]
            try:
                name = KeyName(str(raw).strip().lower()) if isinstance(raw, str) else None
            except ValueError:
                name = None
            if name is None:
                raise ActionSchemaError(
                    f"unknown key {_short(raw)}; use one of: " + ", ".join(k.value for k in KeyName)
                )
            return Key(name)
        case ActionKind.OPEN_APP:
            app = _text(obj, "app", MAX_APP_CHARS, allow_empty=False).strip()
            if not app or any(c in app for c in "\r\n\t"):
                raise ActionSchemaError('"app" must be one line: the app\'s package or name')
            return OpenApp(app)
        case ActionKind.WAIT:
            ms = _int(obj, "ms")
            if not 1 <= ms <= MAX_WAIT_MS:
                raise ActionSchemaError(f"wait ms must be between 1 and {MAX_WAIT_MS}, got {ms}")
            return Wait(ms)
        case ActionKind.FINISH:
            answer = _text(obj, "answer", MAX_ANSWER_CHARS, allow_empty=True)
            done = obj.get("done", True)
            if not isinstance(done, bool):
                raise ActionSchemaError('"done" must be true or false')
            return Finish(answer, done)
    raise AssertionError(f"unhandled action kind {kind}")  # pragma: no cover


def _swipe(obj: Mapping[str, Any], observation: Observation) -> Swipe:
    has_dir = obj.get("direction") is not None
    has_points = "from" in obj or "to" in obj
    if has_dir == has_points:
        raise ActionSchemaError(
            'swipe takes either "direction" (up, down, left, right) or both "from" and "to"'
        )
    if has_dir:
        raw = obj["direction"]
        try:
            direction = Direction(raw.strip().lower()) if isinstance(raw, str) else None
        except ValueError:
            direction = None
        if direction is None:
            raise ActionSchemaError(
                f"unknown swipe direction {_short(raw)}; use up, down, left or right"
            )
        cid = None if obj.get("id") is None else _int(obj, "id")
        if cid is not None:
            _target(observation, cid, ActionKind.SWIPE)
        return Swipe(direction=direction, candidate_id=cid)
    if "id" in obj:
        raise ActionSchemaError('swipe with "from"/"to" takes no "id"')
    if "from" not in obj or "to" not in obj:
        raise ActionSchemaError('swipe needs both "from" and "to" as [x, y] on the 0-1000 grid')
    start, end = _point(obj, "from"), _point(obj, "to")
    if start == end:
        raise ActionSchemaError('swipe "from" and "to" are the same point; use tap_at')
    return Swipe(start_pm=start, end_pm=end)


def focused_fields(observation: Observation) -> list[Candidate]:
    """The candidates of ``observation`` that are focused input fields, shown or not: where a
    ``type`` without an id goes."""
    return [c for c in observation.candidates if c.flags & FOCUSED_FIELD == FOCUSED_FIELD]


def _focused_field(observation: Observation) -> None:
    """A ``type`` without an id goes to the focused field: where the tree is trusted and shows
    none, the text would go nowhere. (Without a trusted tree, a field the pixels cannot mark
    as focused may well be there: the phone's focus decides.)"""
    if not observation.ready or observation.state is not ArbiterState.TREE:
        return
    # A focused field the prompt does not show still takes the text (one under the on-screen
    # keyboard, or the keyboard's own full-screen field in landscape).
    if any(not c.occluded for c in focused_fields(observation)):
        return
    fields = [c for c in observation.candidates if c.shown and c.flags & ElementFlag.EDITABLE]
    if not fields:
        raise ActionTargetError("there is no input field on this screen to type into")
    raise ActionTargetError(
        "no input field is focused; give the id of the field to type into "
        f"(inputs: {', '.join(str(c.id) for c in fields[:10])})"
    )


def _target(
    observation: Observation, candidate_id: int, kind: ActionKind, *, coords: bool = True
) -> Candidate:
    """The candidate ``kind`` may act on; the messages name ids and kinds, never screen text."""
    if not observation.ready:
        raise ActionTargetError("the screen is being captured again; no candidate can be used")
    found = None
    for c in observation.candidates:
        if c.id == candidate_id:
            found = c
            break
    if found is None or not _listed(found):
        shown = observation.shown_ids  # the ids of the prompt's rows (not static text's)
        ids = ", ".join(map(str, shown[:40])) + (" ..." if len(shown) > 40 else "")
        raise ActionTargetError(
            f"there is no candidate {candidate_id} on this screen (ids: {ids or 'none'})"
        )
    c = found
    if c.occluded:
        raise ActionTargetError(
            f"candidate {candidate_id} is covered by another view or window (occluded); "
            "act on what is on top"
        )
    if c.disabled:
        raise ActionTargetError(f"candidate {candidate_id} ({c.kind}) is disabled")
    if kind is ActionKind.TYPE:
        if c.source is not Channel.PIXEL and not c.flags & ElementFlag.EDITABLE:
            raise ActionTargetError(
                f"candidate {candidate_id} ({c.kind}) is not a text field; type into an "
                "input field or omit the id for the focused field"
            )
    elif kind is ActionKind.SWIPE:
        if c.kind == SLIDER_KIND:
            raise ActionTargetError(
                f"candidate {candidate_id} (slider) does not scroll; move it with set and a "
                "value from 0 to 1"
            )
        if c.source is not Channel.PIXEL and not c.flags & ElementFlag.SCROLLABLE:
            raise ActionTargetError(
                f"candidate {candidate_id} ({c.kind}) does not scroll; swipe inside a 'scroll' "
                "candidate or give no id"
            )
    elif kind is ActionKind.SET:
        if c.kind != SLIDER_KIND:
            raise ActionTargetError(
                f"candidate {candidate_id} ({c.kind}) is not a slider; set moves a 'slider' "
                "candidate (tap other controls)"
            )
    elif not c.actionable:
        raise ActionTargetError(
            f"candidate {candidate_id} ({c.kind}) cannot be tapped (not clickable); tap the "
            "control it labels" + (", or use tap_at" if coords else "")
        )
    elif c.source is not Channel.PIXEL and kind is ActionKind.TAP:
        if c.flags & ElementFlag.LONG_CLICKABLE and not c.flags & _TAPPABLE:
            # A long-press-only view eats a tap, unless a view inside it that takes taps lies on
            # top at the tap point (a ListView holding one clickable row of its own size).
            if not _nested_at_point(observation, c, _TAPPABLE, around=False):
                raise ActionTargetError(
                    f"candidate {candidate_id} ({c.kind}) answers only a long press (flag "
                    "'long'); use long_press"
                )
    elif c.source is not Channel.PIXEL and kind is ActionKind.LONG_PRESS:
        if not c.flags & ElementFlag.LONG_CLICKABLE:
            # An enclosing list that takes long presses answers them for its items.
            if not _nested_at_point(observation, c, ElementFlag.LONG_CLICKABLE, around=True):
                raise ActionTargetError(
                    f"candidate {candidate_id} ({c.kind}) does not answer a long press; use tap"
                )
    return c


def _nested_at_point(
    observation: Observation, c: Candidate, answers: ElementFlag, *, around: bool
) -> bool:
    """A usable tree candidate with one of ``answers`` under ``c``'s tap point, inside ``c``'s
    box (or, with ``around``, also enclosing it). Pixel candidates cannot say (they never count).
    """
    point = c.box_px.center
    for o in observation.candidates:
        if o.id == c.id or o.source is Channel.PIXEL or not o.flags & answers:
            continue
        if o.disabled or o.occluded or not o.box_px.contains(point):
            continue
        if c.box_px.encloses(o.box_px) or (around and o.box_px.encloses(c.box_px)):
            return True
    return False


def _listed(candidate: Candidate) -> bool:
    """Shown to the model (truncated list items keep an id but are not offered)."""
    return bool(getattr(candidate, "listed", True))


def _int(obj: Mapping[str, Any], name: str) -> int:
    value = obj[name]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ActionSchemaError(f'"{name}" must be an integer, got {_short(value)}')
    if isinstance(value, float):
        if not value.is_integer():
            raise ActionSchemaError(f'"{name}" must be an integer, got {value}')
        value = int(value)
    return value


def _fraction(obj: Mapping[str, Any], name: str) -> float:
    """A number from 0 to 1 (a slider's position), kept to three decimals."""
    value = obj[name]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ActionSchemaError(f'"{name}" must be a number from 0 to 1, got {_short(value)}')
    if not 0 <= value <= 1:  # NaN and infinities fail too
        raise ActionSchemaError(
            f'"{name}" is {_short(value)}: a slider goes from 0 (its minimum) to 1 (its maximum)'
        )
    return round(float(value), 3)


def _grid(obj: Mapping[str, Any], name: str) -> int:
    value = _int(obj, name)
    if not 0 <= value <= GRID_MAX_PM:
        raise ActionSchemaError(
            f'"{name}" is {_short(value)}: points are on the 0-{GRID_MAX_PM} grid of the screen'
        )
    return value


def _point(obj: Mapping[str, Any], name: str) -> PointPm:
    value = obj[name]
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise ActionSchemaError(f'"{name}" must be [x, y] on the 0-{GRID_MAX_PM} grid')
    return PointPm(_grid({"x": value[0]}, "x"), _grid({"y": value[1]}, "y"))


def _text(
    obj: Mapping[str, Any], name: str, limit: int, *, allow_empty: bool, lines: bool = False
) -> str:
    """A text field of the action; ``lines``: typed text may hold line breaks (ADB Keyboard
    commits them; ``input text`` cannot type one)."""
    value = obj[name]
    if not isinstance(value, str):
        raise ActionSchemaError(f'"{name}" must be a string')
    if not value and not allow_empty:
        raise ActionSchemaError(f'"{name}" is empty')
    if len(value) > limit:
        raise ActionSchemaError(f'"{name}" is {len(value)} characters; the limit is {limit}')
    if name != "text":
        control = _CONTROL_BUT_LINES
    else:
        control = _CONTROL_BUT_NEWLINE if lines else _CONTROL
    if control.search(value):
        if name == "text":
            raise ActionSchemaError(
                '"text" contains control characters; use the key action for enter or tab'
                + ("" if lines else " (this phone types no line break)")
            )
        raise ActionSchemaError(f'"{name}" contains control characters; write plain text')
    return value


def _typeable_here(text: str, unicode_text: bool) -> None:
    if not unicode_text and not typeable(text):
        raise ActionSchemaError(
            '"text" must be printable ASCII: this phone\'s text input types nothing else '
            "(write it without accents, emoji or other symbols)"
        )
    if unicode_text and not typeable_unicode(text):
        raise ActionSchemaError('"text" holds unpaired surrogates; write plain text')


def typeable(text: str) -> bool:
    """Whether ``text`` can be typed by ``adb shell input text``: printable ASCII only."""
    return text.isascii() and text.isprintable()


def typeable_unicode(text: str) -> bool:
    """Whether ADB Keyboard can type ``text``: it travels as UTF-8 (no unpaired surrogates).
    Control characters are refused before this (``_text``); format characters stay, since
    emoji sequences are joined by them."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _short(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
