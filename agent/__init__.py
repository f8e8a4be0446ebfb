"""agent: an OpenAI-compatible decision loop over perception, with a narrow, validated action space.

Modules: :mod:`agent.actions` (the action union and :func:`parse_action`), :mod:`agent.prompt`
(observation + task + history -> messages), :mod:`agent.llm` (the model client, the only
module importing ``openai``), :mod:`agent.executor` (actions -> device input),
:mod:`agent.loop` (observe -> decide -> act) and :mod:`agent.cli` (``perception-agent``).
"""

from agent.actions import (
    Action,
    ActionError,
    Finish,
    Key,
    KeyName,
    LongPress,
    SetSlider,
    Swipe,
    Tap,
    TapAt,
    Type,
    Wait,
    parse_action,
)
from agent.executor import ExecutionError, Executor, input_for
from agent.llm import (
    ChatModel,
    ChatVision,
    Decision,
    LLMConfig,
    LLMError,
    LLMUnavailableError,
    UnusableAnswerError,
    VisionAnswerError,
)
from agent.loop import Agent, AgentError, LoopConfig, StopReason, Transcript
from agent.prompt import HistoryItem, build_messages, system_prompt

__all__ = [
    "Action",
    "ActionError",
    "Agent",
    "AgentError",
    "ChatModel",
    "ChatVision",
    "Decision",
    "ExecutionError",
    "Executor",
    "Finish",
    "HistoryItem",
    "Key",
    "KeyName",
    "LLMConfig",
    "LLMError",
    "LLMUnavailableError",
    "LongPress",
    "LoopConfig",
    "SetSlider",
    "StopReason",
    "Swipe",
    "Tap",
    "TapAt",
    "Transcript",
    "Type",
    "UnusableAnswerError",
    "VisionAnswerError",
    "Wait",
    "build_messages",
    "input_for",
    "parse_action",
    "system_prompt",
]
