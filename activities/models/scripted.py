"""``scripted:<path>`` — navigator decisions read from a YAML/JSON file.

For tests and demos. The file is a list of decisions, or a mapping whose
``decisions`` key holds that list (a ``text`` key may hold the planning
responses of :class:`activities.models.text.ScriptedTextModel` in the same
file)::

    decisions:
      - action: update_flight_plan
        reasoning: zoom into the budget code
        updates: {set_rules: [{glob: "src/budget/**", level: 4}]}
        usage: {input_tokens: 1200, output_tokens: 80, thinking_tokens: 40, cached_tokens: 600}
      - action: update_flight_plan
        reasoning: flaky provider
        updates: {}
        fail_attempts: 2          # attempts 1-2 raise a retryable error, attempt 3 answers
        failed_usage: {input_tokens: 1200}   # what each failed attempt consumed
      - action: finalize_context
        summary: the budget plugin double counts cached tokens

Entry *i* answers iteration ``first_iteration + i`` (``first_iteration``
defaults to 1, the workflow's first step). Keying by iteration rather than
by a cursor keeps the script right across retries, worker restarts and
continue-as-new. When the script runs out the provider finalizes with a note.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_navigator.activities.models.base import DecideCall
from durable_navigator.navcore.decision import ModelDecision, TokenUsage
from durable_navigator.navcore.errors import ConfigError, ModelError
from durable_navigator.navcore.flightplan import FlightPlanUpdate
from durable_navigator.navcore.tools import ToolCall
from durable_navigator.navcore.pricing import format_validation_error

__all__ = ["ScriptedDecision", "DecisionScript", "ScriptedProvider", "ScriptedAttemptError"]

_MAX_SCRIPT_BYTES = 5_000_000


class ScriptedDecision(BaseModel):
    """One scripted answer (plus optional failure injection for retry tests)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    action: Literal["update_flight_plan", "finalize_context", "call_tools", "invalid"]
    reasoning: Annotated[str, Field(max_length=20_000)] = ""
    updates: FlightPlanUpdate | None = None
    summary: Annotated[str | None, Field(max_length=20_000)] = None
    error: str | None = None
    usage: TokenUsage = TokenUsage()
    #: HTTP calls this answer stands for (e.g. 2 to mimic a corrective re-ask)
    calls: int = Field(1, ge=1, le=10)
    #: the first N activity attempts of this step fail with a retryable error
    fail_attempts: int = Field(0, ge=0, le=20)
    #: usage each failed attempt reports
    failed_usage: TokenUsage = TokenUsage()
    #: the code-tool calls of a ``call_tools`` answer
    tool_calls: list[ToolCall] = []

    @model_validator(mode="after")
    def _fields_match_action(self) -> "ScriptedDecision":
        if self.action == "update_flight_plan" and self.updates is None:
            raise ValueError("update_flight_plan needs 'updates' (use {} for no change)")
        if self.action == "finalize_context" and not (self.summary or "").strip():
            raise ValueError("finalize_context needs a non-empty 'summary'")
        if self.action == "call_tools" and not self.tool_calls:
            raise ValueError("call_tools needs a non-empty 'tool_calls' list of {name, args}")
        if self.action == "invalid" and not (self.error or "").strip():
            raise ValueError("invalid needs an 'error' saying what the model got wrong")
        return self


class DecisionScript(BaseModel):
    """A validated script file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    decisions: list[ScriptedDecision] = Field(min_length=1)
    first_iteration: int = Field(1, ge=0)
    #: planning/stage responses for ScriptedTextModel; not read here
    text: dict[str, Any] | None = None

    @classmethod
    def from_file(cls, path: Path) -> "DecisionScript":
        """Read and validate; one-line ``ConfigError`` naming the file and each bad field."""
        origin = f"scripted decisions {path}"
        if not path.is_file():
            raise ConfigError(f"{origin}: no such file; pass an existing file as scripted:<path>")
        if path.stat().st_size > _MAX_SCRIPT_BYTES:
            raise ConfigError(f"{origin}: larger than {_MAX_SCRIPT_BYTES} bytes; is it the right file?")
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{origin}: cannot read it ({exc.__class__.__name__})") from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" line {mark.line + 1}" if mark is not None else ""
            raise ConfigError(f"{origin}:{where}: invalid YAML/JSON; fix the syntax") from None
        if isinstance(data, list):
            data = {"decisions": data}
        if not isinstance(data, dict):
            raise ConfigError(f"{origin}: expected a list of decisions or a mapping with 'decisions'")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(f"{origin}: {format_validation_error(exc)}") from None

    def entry_for(self, iteration: int) -> ScriptedDecision | None:
        """The entry answering ``iteration``; ``None`` past the end of the script."""
        index = iteration - self.first_iteration
        if index < 0:
            raise ModelError(
                f"iteration {iteration} comes before first_iteration {self.first_iteration} "
                "of the script; lower first_iteration"
            )
        return self.decisions[index] if index < len(self.decisions) else None


class ScriptedAttemptError(ApplicationError):
    """A scripted, retryable provider failure; ``usage`` is what the attempt consumed."""

    def __init__(self, message: str, usage: TokenUsage) -> None:
        super().__init__(message, {"usage": usage.model_dump(), "calls": 1}, type="ModelTransientError")
        self.usage = usage
        self.calls = 1


def _current_attempt() -> int:
    """The activity attempt (1-based); 1 outside an activity (plain unit tests)."""
    try:
        return activity.info().attempt
    except RuntimeError:
        return 1


class ScriptedProvider:
    """Decisions from a script file (implements ``ModelProvider``)."""

    def __init__(self, path: Path | str | None = None) -> None:
        """Load and validate the script now, so a bad file fails before any run."""
        if path is None or not str(path).strip():
            raise ModelError("the scripted model needs a file: use --model scripted:<path>")
        self.path = Path(path)
        self.script = DecisionScript.from_file(self.path)

    def handles(self, model: str) -> bool:
        """``scripted:<path>`` names."""
        return model.startswith("scripted:")

    async def decide(self, call: DecideCall) -> ModelDecision:
        """The entry for ``call.iteration``, or a finalize note when the script ran out."""
        entry = self.script.entry_for(call.iteration)
        if entry is None:
            count = len(self.script.decisions)
            note = f"scripted decisions exhausted after {count} entries; finalizing the current map"
            call.heartbeat("script exhausted")
            return ModelDecision(
                action="finalize_context", reasoning=note, summary=note, model=call.model, calls=0
            )
        attempt = _current_attempt()
        if attempt <= entry.fail_attempts:
            raise ScriptedAttemptError(
                f"scripted transient failure (attempt {attempt} of {entry.fail_attempts} failing)",
                entry.failed_usage,
            )
        call.heartbeat(f"scripted decision for iteration {call.iteration}")
        return ModelDecision(
            action=entry.action,
            reasoning=entry.reasoning,
            updates=entry.updates,
            summary=entry.summary,
            error=entry.error if entry.action == "invalid" else None,
            model=call.model,
            usage=entry.usage,
            calls=entry.calls,
            tool_calls=entry.tool_calls,
        )
