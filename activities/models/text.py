"""Plain text completion for the planning, stage and compression activities.

Integration note
----------------
:class:`TextModel` is the small interface those activities call::

    text, usage = await model.complete(system, user, max_output_tokens,
                                       kind="planning.plan", data={...})

``kind`` is the activity name (the scripted model keys its responses by it);
``data`` carries structured inputs that only deterministic models read (the
offline model plans from ``data["engine"]``, the opened ``repomap.RepoMap``).
:func:`build_text_model` maps the run's model name exactly like
``activities.models.registry.build_provider``: ``offline``,
``scripted:<file>``, ``gemini-*``. Gemini reuses the decide path's client
construction and error classification (SDK retries off; 408/429/5xx
retryable, other 4xx non-retryable with a clear message): Temporal owns retries.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import yaml
from durable_navigator.navcore.decision import TokenUsage
from durable_navigator.navcore.errors import ConfigError, ModelError

__all__ = [
    "TextModel",
    "ScriptedTextModel",
    "GeminiTextModel",
    "build_text_model",
    "approx_tokens",
]


@runtime_checkable
class TextModel(Protocol):
    """A source of plain text completions."""

    name: str

    async def complete(
        self,
        system: str,
        user: str,
        max_output_tokens: int,
        *,
        kind: str = "",
        data: Mapping[str, Any] | None = None,
    ) -> tuple[str, TokenUsage]:
        """Return the completion text and the tokens it used."""
        ...


def approx_tokens(text: str) -> int:
    """A cheap token estimate (~4 characters per token) for deterministic models' usage."""
    return (len(text) + 3) // 4


class ScriptedTextModel:
    """Responses read from a YAML/JSON file, keyed by activity name.

    File shape (top level, or under a ``text:`` key so one file can also hold
    scripted decisions)::

        planning.analyze: ["We must ... \\nREFLECT: yes"]
        stages.check_criteria:
          - "C1: MET | ..."                       # stage 0
          - ["garbage", "C1: NOT MET | ..."]      # stage 1: first answer, then the re-ask's
          - {text: "...", usage: {input_tokens: 120, output_tokens: 40}}

    Like the scripted decisions, entries are chosen by a deterministic index
    the activity passes in ``data["script_index"]`` (0 for the one-shot
    planning calls, the stage index for stage calls, the compression ordinal),
    so retries, worker restarts and replays get the same answer; a list entry
    holds the answers of successive attempts (``data["attempt"]``, 1-based).
    Without an index, entries are consumed in order.
    """

    def __init__(self, responses: Mapping[str, list[Any]], name: str = "scripted", source: str = "") -> None:
        self.name = name
        self._source = source or "the script"
        self._responses = {k: list(v) for k, v in responses.items()}
        self._used: dict[str, int] = {}
        #: (kind, system, user) of every call, for tests and demos to inspect
        self.requests: list[tuple[str, str, str]] = []

    @classmethod
    def from_file(cls, path: Path) -> "ScriptedTextModel":
        """Load a script; ``ConfigError`` when missing or malformed."""
        try:
            raw = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read scripted responses {path}: {exc.strerror}; check the path") from exc
        try:
            data = json.loads(raw) if path.suffix == ".json" else yaml.safe_load(raw)
        except (json.JSONDecodeError, yaml.YAMLError) as exc:
            raise ConfigError(f"scripted responses {path} are not valid YAML/JSON: {exc}".splitlines()[0]) from exc
        if isinstance(data, list) or (isinstance(data, dict) and "decisions" in data and "text" not in data):
            data = {}  # a decisions-only script: any text call says what is missing
        elif isinstance(data, dict) and isinstance(data.get("text"), dict):
            data = data["text"]
        if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
            raise ConfigError(f"scripted responses {path} must map activity names to lists of responses")
        return cls(data, name=f"scripted:{path}", source=str(path))

    async def complete(
        self,
        system: str,
        user: str,
        max_output_tokens: int,
        *,
        kind: str = "",
        data: Mapping[str, Any] | None = None,
    ) -> tuple[str, TokenUsage]:
        """The scripted response for ``kind`` (by ``script_index``/``attempt``, else in order)."""
        self.requests.append((kind, system, user))
        queue = self._responses.get(kind) or []
        index = (data or {}).get("script_index")
        if index is None:
            index = self._used.get(kind, 0)
            self._used[kind] = index + 1
        if not 0 <= index < len(queue):
            raise ModelError(
                f"no scripted response #{index} for {kind!r} ({len(queue)} given); add it to {self._source}"
            )
        item = queue[index]
        if isinstance(item, list):
            attempt = int((data or {}).get("attempt", 1))
            if not 1 <= attempt <= len(item):
                raise ModelError(f"no scripted answer for attempt {attempt} of {kind!r} #{index}; add it to {self._source}")
            item = item[attempt - 1]
        if isinstance(item, dict):
            text = str(item.get("text", ""))
            usage = TokenUsage.model_validate(item.get("usage") or {})
        else:
            text = str(item)
            usage = TokenUsage(input_tokens=approx_tokens(system + user), output_tokens=approx_tokens(text))
        return text, usage


class GeminiTextModel:
    """Text completions from a ``gemini-*`` model through ``google-genai``.

    Client construction, credentials and error classification are the decide
    path's (:mod:`activities.models.gemini`): SDK retries off, 408/429/5xx and
    transport failures retryable, other 4xx non-retryable with a clear message.
    """

    def __init__(
        self,
        model: str,
        credentials: Any | None = None,
        transport: Any | None = None,
    ) -> None:
        from durable_navigator.activities.models.gemini import GeminiConfig, GeminiCredentials, build_client

        self.name = model
        self._creds = credentials if credentials is not None else GeminiCredentials.from_env()
        self._client = build_client(self._creds, GeminiConfig(), transport=transport)

    async def complete(
        self,
        system: str,
        user: str,
        max_output_tokens: int,
        *,
        kind: str = "",
        data: Mapping[str, Any] | None = None,
    ) -> tuple[str, TokenUsage]:
        """One ``generate_content`` call; usage from ``usage_metadata``."""
        import httpx
        from google.genai import errors, types

        from durable_navigator.activities.models.gemini import classify_api_error, usage_from_metadata

        config = types.GenerateContentConfig(system_instruction=system, max_output_tokens=max_output_tokens)
        try:
            resp = await self._client.aio.models.generate_content(model=self.name, contents=user, config=config)
        except (errors.APIError, httpx.HTTPError) as exc:
            raise classify_api_error(exc, self.name, self._creds.secrets(), calls=1) from exc
        return resp.text or "", usage_from_metadata(resp.usage_metadata)


def build_text_model(model: str) -> TextModel:
    """The text model for a run's model name; ``ModelError`` for unknown names."""
    name = model.strip()
    if name == "offline":
        from durable_navigator.activities.models.text_offline import OfflineTextModel

        return OfflineTextModel()
    if name.startswith("scripted:"):
        return ScriptedTextModel.from_file(Path(name.partition(":")[2]))
    if name.startswith("gemini-"):
        return GeminiTextModel(name)
    raise ModelError(f"unknown model {model!r}; use 'offline', 'scripted:<file>' or a 'gemini-*' model name")
