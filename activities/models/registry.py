"""The provider registry: one :class:`~activities.models.base.Model` per model name per worker.

Names are parsed by the one parser, :func:`navcore.model.model.parse_model_spec`;
each provider lives in one module or package and is imported on demand, so a
worker without ``google-genai`` credentials still serves the offline model.
OpenAI-compatible endpoints (``<endpoint>:<model>``) come from the worker's
configuration (``navigator.yaml`` → ``endpoints``) plus the built-in ones.
Tests and embedders register their own model under a name (``overrides``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from durable_navigator.activities.models.base import Model
from durable_navigator.navcore.model.endpoints import Endpoint, resolve_endpoints
from durable_navigator.navtypes.errors import ModelError
from durable_navigator.navcore.model.model import ModelSpec, parse_model_spec

__all__ = ["ModelRegistry"]


class ModelRegistry:
    """Builds and keeps the models this worker serves."""

    def __init__(
        self,
        engines: Callable[[str], Any] | None = None,
        *,
        overrides: Mapping[str, Model] | None = None,
        gemini_transport: Any = None,
        endpoints: Mapping[str, Endpoint] | None = None,
        openai_transport: Any = None,
    ) -> None:
        """``engines``: repo root → its opened repo-map (the offline model's dependency).

        ``endpoints``: the OpenAI-compatible endpoints of ``navigator.yaml`` (the built-in
        ``openai``, ``ollama`` and ``openrouter`` are always there); ``*_transport``
        replace only a provider's HTTP layer (tests).
        """
        self._engines = engines
        self._overrides = dict(overrides or {})
        self._gemini_transport = gemini_transport
        self._openai_transport = openai_transport
        self.endpoints: dict[str, Endpoint] = resolve_endpoints(endpoints)
        self._models: dict[str, Model] = {}

    def spec(self, model: str) -> ModelSpec:
        """The parsed model name (``ModelError`` when unknown)."""
        return parse_model_spec(model, frozenset(self.endpoints))

    def model(self, model: str) -> Model:
        """The model serving ``model`` (built once per worker)."""
        if model in self._overrides:
            return self._overrides[model]
        if model not in self._models:
            self._models[model] = self._build(self.spec(model))
        return self._models[model]

    def check(self, model: str) -> None:
        """``ModelError`` when this worker cannot serve ``model`` (unknown, no credentials)."""
        built = self.model(model)
        check = getattr(built, "check_credentials", None)
        if check is not None:
            check()

    def _build(self, spec: ModelSpec) -> Model:
        if spec.provider == "offline":
            from durable_navigator.activities.models.offline import OfflineModel

            if self._engines is None:
                raise ModelError("the offline model needs the repo-map engines of this worker; build the "
                                 "registry with engines=")
            return OfflineModel(self._engines)
        if spec.provider == "scripted":
            from durable_navigator.activities.models.scripted import ScriptedModel

            return ScriptedModel(spec.script)
        if spec.provider == "gemini":
            from durable_navigator.activities.models.gemini import GeminiModel

            return GeminiModel(transport=self._gemini_transport)
        if spec.provider == "openai" and spec.endpoint is not None:
            from durable_navigator.activities.models.openai import OpenAIModel

            return OpenAIModel(spec.endpoint, self.endpoints[spec.endpoint], transport=self._openai_transport)
        raise ModelError(f"the {spec.provider} provider is not available on this worker for {spec.model!r}; "
                         "use 'offline', a gemini-* model or '<endpoint>:<model>'")
