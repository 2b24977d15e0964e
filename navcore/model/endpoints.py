"""OpenAI-compatible endpoints: where ``<endpoint>:<model>`` names are served, and at what price.

An endpoint is a base URL speaking the chat-completions protocol (OpenAI,
OpenRouter, Ollama, vLLM, llama.cpp's server, LM Studio, LiteLLM), the *name*
of the environment variable holding its key on the worker (never the key),
how it calls functions (``native`` tool calling, or the ``json`` output
fallback for servers without it — chosen here, never guessed) and, for a
server whose models the shipped price table does not know, their prices
(``"*"`` prices every model of the endpoint; 0 is a valid price).

Three endpoints are built in (:data:`BUILTIN_ENDPOINTS`); ``navigator.yaml``
adds more or replaces one of them under ``endpoints:``. Pure data: the worker's
model registry, the pricing loader and the CLI all read the same
:func:`resolve_endpoints`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from durable_navigator.navcore.model.pricing import ModelPricingRates

__all__ = [
    "ToolCalling",
    "Endpoint",
    "BUILTIN_ENDPOINTS",
    "RESERVED_ENDPOINT_NAMES",
    "ENDPOINT_NAME",
    "check_endpoint_name",
    "resolve_endpoints",
    "endpoint_price_entries",
]

ToolCalling = Literal["native", "json"]

#: endpoint names: what may stand before ``:`` in a model name (see ``navcore.model.modelspec``)
ENDPOINT_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
#: names that already mean something else in a model name
RESERVED_ENDPOINT_NAMES = frozenset({"offline", "scripted", "models"})
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


class Endpoint(BaseModel):
    """One OpenAI-compatible server (``navigator.yaml`` → ``endpoints.<name>``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: e.g. ``http://127.0.0.1:11434/v1`` (Ollama), ``http://127.0.0.1:8000/v1`` (vLLM)
    base_url: Annotated[str, Field(min_length=1, max_length=2000, pattern=r"^https?://\S+$")]
    #: the environment variable holding the key on the worker; ``null``: the server needs none
    api_key_env: str | None = None
    #: ``native``: the server's function calling; ``json``: functions described in the prompt and
    #: answered as one JSON object (for servers without tool calling)
    tool_calling: ToolCalling = "native"
    #: model name (as after ``<endpoint>:``) or ``"*"`` → price; merged into the price table
    prices: dict[Annotated[str, Field(min_length=1, max_length=200)], ModelPricingRates] = {}
    #: the request field of the output cap: OpenAI's reasoning models take only
    #: ``max_completion_tokens``; most other servers read ``max_tokens``
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    #: sampling temperature sent with every request (``null``: the server's default)
    temperature: float | None = Field(None, ge=0.0, le=2.0)
    #: per-HTTP-request timeout; the activity's start-to-close bounds the whole call
    request_timeout_s: float = Field(300.0, gt=0, le=3600)

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_NAME.match(value):
            raise ValueError(
                "api_key_env is the NAME of an environment variable (e.g. OPENAI_API_KEY), never a key; "
                "set the key in that variable on the worker"
            )
        return value

    @property
    def local(self) -> bool:
        """True when the base URL is on this machine (loopback)."""
        host = re.sub(r"^https?://", "", self.base_url).split("/")[0].rsplit(":", 1)[0].strip("[]")
        return host in {"127.0.0.1", "localhost", "::1", "0.0.0.0"}


#: every model of a local server costs nothing to call
_FREE = ModelPricingRates(input=0, output=0, thinking=0, cached=0, note="local server: no per-token price")

BUILTIN_ENDPOINTS: dict[str, Endpoint] = {
    "openai": Endpoint(base_url="https://api.openai.com/v1", api_key_env="OPENAI_API_KEY",
                       max_tokens_field="max_completion_tokens"),
    "openrouter": Endpoint(base_url="https://openrouter.ai/api/v1", api_key_env="OPENROUTER_API_KEY"),
    # Ollama's default address; its models run locally, so they are priced at 0
    "ollama": Endpoint(base_url="http://127.0.0.1:11434/v1", api_key_env=None, prices={"*": _FREE}),
}


def check_endpoint_name(name: str) -> str:
    """``name`` if it can stand before ``:`` in a model name; ``ValueError`` saying why not."""
    if not ENDPOINT_NAME.match(name):
        raise ValueError(f"endpoint name {name!r}: use lower-case letters, digits, '-' or '_' (starting with a "
                         "letter, at most 40 characters)")
    if name in RESERVED_ENDPOINT_NAMES or name.startswith("gemini-"):
        raise ValueError(f"endpoint name {name!r} already means something in a model name; pick another")
    return name


def resolve_endpoints(configured: Mapping[str, Endpoint] | None = None) -> dict[str, Endpoint]:
    """The built-in endpoints with the configured ones added (a configured name replaces a built-in)."""
    out = dict(BUILTIN_ENDPOINTS)
    out.update(configured or {})
    return out


def endpoint_price_entries(endpoints: Mapping[str, Endpoint]) -> dict[str, dict[str, Any]]:
    """The endpoints' declared prices as price-table entries (``<endpoint>:<model>`` / ``<endpoint>:*``)."""
    entries: dict[str, dict[str, Any]] = {}
    for name, endpoint in sorted(endpoints.items()):
        for model, rates in sorted(endpoint.prices.items()):
            entries[f"{name}:{model}"] = rates.model_dump(mode="python", exclude_none=True)
    return entries
