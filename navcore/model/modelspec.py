"""The one parser of model names (used by the CLI, the pricing table and the provider registry).

Imports nothing but the error hierarchy, so the CLI can check a name before
it imports anything heavy.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

from durable_navigator.navtypes.errors import ModelError

__all__ = ["Provider", "BUILTIN_OPENAI_PREFIXES", "ModelSpec", "parse_model_spec"]

Provider = Literal["offline", "scripted", "gemini", "openai"]

#: an endpoint or provider prefix: ``ollama:qwen2.5-coder:7b`` → ``ollama``
_PREFIX = re.compile(r"^([a-z][a-z0-9_-]{0,39}):(.+)$")

#: OpenAI-compatible prefixes known without configuration (their base URL is built in)
BUILTIN_OPENAI_PREFIXES = ("openai", "ollama", "openrouter")


class ModelSpec(BaseModel):
    """A parsed model name.

    ``name`` is what the provider is asked for (``gemini-2.5-flash``,
    ``qwen2.5-coder:7b``); ``canonical`` is the run's model string and the
    pricing key (``scripted`` for any script file).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: Provider
    name: str
    #: ``openai`` provider: the endpoint (``openai``, ``ollama``, or one named in navigator.yaml)
    endpoint: str | None = None
    #: ``scripted`` provider: the script file
    script: str | None = None
    #: the model string as the user gave it, normalised (what runs carry)
    model: str

    @property
    def pricing_key(self) -> str:
        """The pricing-table key: scripts price as ``scripted``; endpoints as ``endpoint:name``."""
        if self.provider == "scripted":
            return "scripted"
        return self.model


def parse_model_spec(text: str, endpoints: frozenset[str] | set[str] | tuple[str, ...] = ()) -> ModelSpec:
    """Parse a model name; ``ModelError`` (one line, what to use instead) when unknown.

    Accepted: ``offline``; ``scripted:<file>``; ``gemini-*`` (also
    ``models/gemini-*``); ``<endpoint>:<model>`` for the built-in OpenAI-compatible
    endpoints (``openai``, ``ollama``, ``openrouter``) and any endpoint named in
    ``endpoints`` (from ``navigator.yaml``).
    """
    raw = (text or "").strip()
    if raw == "offline":
        return ModelSpec(provider="offline", name="offline", model="offline")
    if raw == "scripted" or raw.startswith("scripted:"):
        script = raw.partition(":")[2].strip()
        if not script:
            raise ModelError("the scripted model needs a file: use --model scripted:<path of a YAML/JSON script>")
        return ModelSpec(provider="scripted", name="scripted", script=script, model=f"scripted:{script}")
    bare = raw.removeprefix("models/")
    if bare.startswith("gemini-") and len(bare) > len("gemini-"):
        return ModelSpec(provider="gemini", name=bare, model=bare)
    match = _PREFIX.match(raw)
    if match is not None:
        endpoint, name = match.group(1), match.group(2).strip()
        if endpoint in BUILTIN_OPENAI_PREFIXES or endpoint in endpoints:
            if not name:
                raise ModelError(f"model {raw!r} names no model after '{endpoint}:'; e.g. {endpoint}:gpt-4.1-mini")
            return ModelSpec(provider="openai", name=name, endpoint=endpoint, model=f"{endpoint}:{name}")
        known = ", ".join(sorted({*BUILTIN_OPENAI_PREFIXES, *endpoints}))
        raise ModelError(
            f"unknown model endpoint {endpoint!r} in {raw!r}; use one of {known}, or name it under "
            "'endpoints:' in navigator.yaml"
        )
    raise ModelError(
        f"unknown model {raw!r}; use 'offline', 'scripted:<file>', a 'gemini-*' model, or "
        "'<endpoint>:<model>' (openai:, ollama:, openrouter:, or an endpoint from navigator.yaml)"
    )


