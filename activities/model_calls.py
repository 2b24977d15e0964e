"""The model activities: ``model.prepare`` and ``model.request`` — every model call, every provider.

``model.prepare`` builds the request of a prompt spec (:mod:`activities.requests`),
stores it, counts its prompt exactly and prices one HTTP call's upper bound.

``model.request`` is one attempt of a model call:

* before every HTTP call (the first, and each corrective re-ask) the attempt
  checks that what it has spent plus that call's upper bound stays within its
  ``allowance_micros`` — the run's remaining budget — so the limit is a hard
  cap; a first call that cannot fit is refused (``BudgetError``) before any
  spend;
* the provider's answer is parsed into the task's typed result (a navigator
  decision from function calls; a plan, a check, a reflection or a summary
  from text); an unusable answer gets ``max_reasks`` corrective re-asks, each
  priced; a turn still unusable is an ``invalid`` decision, other tasks fail
  non-retryably (``PlanParseError``) and the workflow falls back;
* what the attempt consumed is reported everywhere the workflow can see it:
  in the result, in a failure's details, in the failure raised when the
  workflow cancels the call (type ``ModelCallCancelled``), and in every
  heartbeat (with the upper bound of the HTTP call in flight, which a crashed
  attempt is booked at).

Temporal does not retry ``model.request`` (one attempt per activity): the
workflow's model-call block decides each next attempt, after the budget
check and the stop check (see ``workflows/blocks/model_call.py``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from durable_navigator.activities.artifacts import ArtifactStore
from durable_navigator.activities.models.base import CallContext, ModelCallError, ModelStalledError, UsageMeter
from durable_navigator.activities.models.registry import ModelRegistry
from durable_navigator.activities.preflight import refuse_unless_served
from durable_navigator.activities.pricing_loader import TablePricer
from durable_navigator.activities.requests import EngineSource, RequestBuilder
from durable_navigator.activities.research_calls import RESEARCH_KINDS, invalid_turn, parse_research
from durable_navigator.navcore.run.artifacts import ArtifactRef
from durable_navigator.navcore.navigator.report import HISTORY_REASONING_CHARS
from durable_navigator.navcore.run.decision import FUNCTION_NAMES, ModelDecision
from durable_navigator.navtypes.errors import BudgetError, NavigatorError
from durable_navigator.navcore.model.model import Message, ModelRequest, ModelResponse
from durable_navigator.navcore.navigator.model_calls import (
    AnalysisOut,
    AttemptUsage,
    CheckOut,
    DecisionOut,
    InvestigateOut,
    ModelCallInput,
    ModelCallOutput,
    ModelResult,
    PlanOut,
    PreparedCall,
    PrepareInput,
    ReflectionOut,
    ReviewOut,
    SummaryOut,
)
from durable_navigator.navcore.navigator.map_criteria import apply_map_checks
from durable_navigator.navcore.planning.planning import PlanParseError
from durable_navigator.navcore.planning.parse import (
    parse_analysis,
    parse_criteria_check,
    parse_reflection,
    parse_review,
    parse_stage_plan,
)
from durable_navigator.navcore.planning.prompts import corrective_suffix
from durable_navigator.navcore.investigation.prompts import parse_investigate, record_text
from durable_navigator.navcore.model.model import InvestigateTask

__all__ = ["ModelCallActivities", "CANCELLED_ERROR_TYPE", "WORKER_SHUTDOWN_TYPE", "PARSE_ERROR_TYPE"]

CANCELLED_ERROR_TYPE = "ModelCallCancelled"
#: an attempt cut short because its worker shut down (retryable: it was nobody's stop)
WORKER_SHUTDOWN_TYPE = "WorkerShutdown"
PARSE_ERROR_TYPE = "PlanParseError"
MEDIA_JSON = "application/json"
MEDIA_TEXT = "text/plain; charset=utf-8"
#: summary characters of a decision kept in history (full text in its artifact; the reasoning's
#: limit, HISTORY_REASONING_CHARS, is shared with the CLI in navcore.navigator.report)
HISTORY_SUMMARY_CHARS = 2000
#: seconds between heartbeats of a running call (the worker's throttle sends at most ~1/s)
HEARTBEAT_EVERY_S = 0.5


class ModelCallActivities:
    """``model.prepare`` and ``model.request`` with their dependencies (one instance per worker)."""

    def __init__(
        self,
        store: ArtifactStore,
        *,
        pricer: TablePricer,
        registry: ModelRegistry,
        engines: EngineSource,
        token_counter: Callable[[str], int] | None = None,
        host_queue: Callable[[], str] = lambda: "",
    ) -> None:
        """``host_queue()``: the queue only this host polls (its warm index), named in every prepared call
        so the run sends its next index-bound activities there (``workflows/blocks/affinity.py``)."""
        self.store = store
        self._host_queue = host_queue
        self.pricer = pricer
        self.registry = registry
        self.builder = RequestBuilder(store, engines)
        self.count_tokens = token_counter or _repomap_count_tokens

    def all(self) -> list[Callable[..., Any]]:
        """The activities of this instance, for worker registration."""
        return [self.prepare, self.request]

    # -- prepare -----------------------------------------------------------

    @activity.defn(name="model.prepare")
    async def prepare(self, inp: PrepareInput) -> PreparedCall:
        """Build, count, price and store one model request (heartbeating: it may render a map)."""
        beat = asyncio.create_task(_heartbeat_forever())
        try:
            # unknown model, no credentials or no price on this worker: handed back for another worker
            refuse_unless_served([inp.model], registry=self.registry, pricer=self.pricer)
            rates = self.pricer.rates(inp.model)
            req = await self.builder.build(inp.model, inp.spec)
            tokens = self._prompt_tokens(req)
            ref = self.store.put_bytes(req.model_dump_json().encode("utf-8"), MEDIA_JSON, "")
        except NavigatorError as exc:
            raise ApplicationError(str(exc), type=exc.kind, non_retryable=True) from exc
        finally:
            beat.cancel()
        return PreparedCall(
            request_ref=ref,
            prompt_tokens=tokens,
            max_output_tokens=req.max_output_tokens,
            estimate_micros=self.pricer.estimate(inp.model, tokens, req.max_output_tokens),
            rates=rates,
            host_queue=self._host_queue(),
        )

    def _prompt_tokens(self, req: ModelRequest) -> int:
        text = sum(self.count_tokens(m.content) for m in req.messages)
        tools = self.count_tokens(json.dumps([t.model_dump() for t in req.tools])) if req.tools else 0
        return text + tools

    # -- request -------------------------------------------------------------

    @activity.defn(name="model.request")
    async def request(self, inp: ModelCallInput) -> ModelCallOutput:
        """One attempt: budget-checked HTTP call(s), parsed; consumption reported on every exit."""
        call = _Attempt(self, inp)
        beat = asyncio.create_task(call.heartbeat_forever())
        try:
            return await call.run()
        except asyncio.CancelledError:
            call.meter.settle(cut=True)  # the request was sent: the prompt is billed
            if activity.is_worker_shutdown():
                # not a stop: this worker is going away; the workflow's next attempt goes to a live one
                raise call.failure(ApplicationError(
                    "the worker shut down during the model call", type=WORKER_SHUTDOWN_TYPE)) from None
            # benign: a stop is the user's choice, not a failure worth a warning and a traceback in
            # the worker's log (the SDK logs a benign failure at debug)
            raise call.failure(ApplicationError(
                "the model call was cancelled by the workflow (stop)", type=CANCELLED_ERROR_TYPE, non_retryable=True,
                category=ApplicationErrorCategory.BENIGN)) from None
        except ModelCallError as exc:
            call.meter.settle(exc.usage, cut=isinstance(exc, ModelStalledError))
            delay = timedelta(seconds=exc.retry_after_s) if exc.retry_after_s else None
            raise call.failure(ApplicationError(str(exc), type=exc.kind, non_retryable=not exc.retryable,
                                                next_retry_delay=delay)) from None
        except NavigatorError as exc:
            call.meter.settle()
            raise call.failure(ApplicationError(str(exc), type=exc.kind, non_retryable=True)) from None
        except ApplicationError as exc:
            call.meter.settle()
            raise call.failure(exc) from None
        except Exception as exc:  # an unexpected provider failure: retryable, booked
            call.meter.settle()
            raise call.failure(ApplicationError(f"{type(exc).__name__}: {exc}"[:500] or type(exc).__name__,
                                                type=type(exc).__name__)) from None
        finally:
            beat.cancel()


class _Attempt:
    """The state of one ``model.request`` attempt."""

    def __init__(self, acts: ModelCallActivities, inp: ModelCallInput) -> None:
        self.acts, self.inp = acts, inp
        self.meter = UsageMeter()
        self.call_estimate = inp.call_estimate_micros

    # what the attempt has consumed, as the workflow books it
    def spent(self) -> AttemptUsage:
        cost = self.acts.pricer.cost(self.inp.model, self.meter.usage, self.meter.calls)
        in_flight = self.call_estimate if self.meter.in_flight else 0
        return AttemptUsage(usage=self.meter.usage, cost_micros=cost, calls=self.meter.calls, attempts=1,
                            in_flight_micros=in_flight)

    def failure(self, err: ApplicationError) -> ApplicationError:
        """``err`` with this attempt's consumption as its first detail."""
        spent = self.spent().model_dump(mode="json")
        _heartbeat(spent)
        return ApplicationError(err.message, spent, type=err.type, non_retryable=err.non_retryable,
                                next_retry_delay=err.next_retry_delay, category=err.category)

    async def heartbeat_forever(self) -> None:
        while True:
            _heartbeat(self.spent().model_dump(mode="json"))
            await asyncio.sleep(HEARTBEAT_EVERY_S)

    async def run(self) -> ModelCallOutput:
        acts, inp = self.acts, self.inp
        # prepared on one worker, called on another: this one may not serve the model (handed back)
        refuse_unless_served([inp.model], registry=acts.registry, pricer=acts.pricer)
        req = ModelRequest.model_validate_json(acts.store.get_bytes(inp.request_ref).decode("utf-8"))
        model = acts.registry.model(inp.model)
        ctx = CallContext(meter=self.meter, heartbeat=lambda note: _heartbeat(self.spent().model_dump(mode="json")),
                          stream_guard=inp.stream, attempt=inp.attempt, prompt_tokens=inp.prompt_tokens)
        prompt_tokens, problem = inp.prompt_tokens, ""
        response = ModelResponse(calls=0)
        for ask in range(inp.max_reasks + 1):
            if self.spent().cost_micros + self.call_estimate > inp.allowance_micros:
                if ask == 0:
                    raise BudgetError(
                        f"the next call needs up to {self.call_estimate} micro-USD but only "
                        f"{inp.allowance_micros} is left; raise the budget or finalize")
                problem = f"{problem}; no budget left for another corrective re-ask"
                break
            self.meter.begin(prompt_tokens)
            ctx.prompt_tokens = prompt_tokens
            response = await model.request(req, ctx)
            self.meter.end(response.usage)
            parsed = self._parse(req, response)
            if not isinstance(parsed, str):
                return ModelCallOutput(result=parsed, spent=self.spent())
            problem = parsed
            req, added = _corrective(req, response, parsed)
            prompt_tokens += acts.count_tokens(added) + 16
            self.call_estimate = acts.pricer.estimate(inp.model, prompt_tokens, req.max_output_tokens)
        if inp.kind == "research.execute":
            # like a navigator turn: an unusable answer is a turn the workflow logs, not a failed call
            return ModelCallOutput(result=invalid_turn(
                f"no usable function call after {self.meter.calls} request(s): {problem}", response.text),
                spent=self.spent())
        if inp.kind == "decide":
            decision = ModelDecision(action="invalid", model=inp.model,
                                     error=f"no usable function call after {self.meter.calls} request(s): {problem}"[:2000],
                                     reasoning=response.text[:2000])
            return ModelCallOutput(result=self._decision_out(decision), spent=self.spent())
        raise ApplicationError(f"{inp.kind}: the model's answer could not be parsed: {problem}"[:800],
                               type=PARSE_ERROR_TYPE, non_retryable=True)

    def _parse(self, req: ModelRequest, resp: ModelResponse) -> ModelResult | str:
        """The typed result of the answer, or why it is unusable (quoted in the re-ask)."""
        task, text = req.task, resp.text
        malformed = [c for c in resp.tool_calls if c.raw_arguments is not None]
        if malformed:
            call = malformed[0]
            return (f"the arguments of {call.name} were not a JSON object ({call.raw_arguments[:200]!r}); "
                    "send them as one valid JSON object")
        if task.kind == "decide":
            from durable_navigator.navcore.run.decision import decision_from_calls

            decision = decision_from_calls([(c.name, c.args) for c in resp.tool_calls], self.inp.model, text)
            return decision if isinstance(decision, str) else self._decision_out(decision)
        if task.kind in RESEARCH_KINDS:
            return parse_research(req, resp, self.inp.model, self.acts.store)
        if isinstance(task, InvestigateTask):
            parsed = parse_investigate(task, text)
            if task.kind == "investigate.compress" and isinstance(parsed, InvestigateOut):
                # the whole record goes to the store; history keeps the trimmed one and the reference
                whole = record_text(text).encode("utf-8")
                parsed = parsed.model_copy(update={"record_ref": self.acts.store.put_bytes(whole, MEDIA_TEXT, "")})
            return parsed
        try:
            return TEXT_PARSERS[task.kind](task, text)
        except PlanParseError as exc:
            return str(exc)

    def _decision_out(self, decision: ModelDecision) -> DecisionOut:
        """The decision for history (trimmed) with the full one in the artifact store."""
        acts = self.acts
        ref: ArtifactRef = acts.store.put_bytes(decision.model_dump_json().encode("utf-8"), MEDIA_JSON, "")
        summary = decision.summary[:HISTORY_SUMMARY_CHARS] if decision.summary else decision.summary
        trimmed = decision.model_copy(update={"reasoning": decision.reasoning[:HISTORY_REASONING_CHARS],
                                              "summary": summary})
        return DecisionOut(decision=trimmed, decision_ref=ref)


def _criteria(task: Any, text: str) -> CheckOut:
    # a criterion about the map is judged from the map, whatever the model said
    check = parse_criteria_check(text, list(task.stage.success_criteria), task.index)
    return CheckOut(check=apply_map_checks(check, task.files, task.map_text))


def _summary(task: Any, text: str) -> SummaryOut | str:
    if not text.strip():
        return "the summary was empty; write a plain-text summary of the log"
    return SummaryOut(summary=text.strip())


#: kind -> the parser of a plain-text answer (planning, stage and summary calls): the typed result, or
#: why the answer is unusable (``PlanParseError`` says it too). The other kinds are parsed above:
#: ``decide`` from its function call, research and investigation calls by their own modules
TEXT_PARSERS: dict[str, Callable[[Any, str], ModelResult | str]] = {
    "planning.analyze": lambda task, text: AnalysisOut(analysis=parse_analysis(text)),
    "planning.review": lambda task, text: ReviewOut(review=parse_review(text)),
    "planning.plan": lambda task, text: PlanOut(plan=parse_stage_plan(text, task.config)),
    "stages.check_criteria": _criteria,
    "stages.reflect": lambda task, text: ReflectionOut(reflection=parse_reflection(text, task.config)),
    "navigator.compress": _summary,
}


def _corrective(req: ModelRequest, resp: ModelResponse, problem: str) -> tuple[ModelRequest, str]:
    """The request with the model's unusable answer and the correction appended (and the added text)."""
    if req.task.kind == "decide":
        names = " or ".join(f"{n}(...)" for n in FUNCTION_NAMES)
        correction = (f"Your previous answer was not usable: {problem}. Answer again with exactly one function "
                      f"call ({names}, or code-tool calls) whose arguments match the declared schema.")
    elif req.task.kind == "research.execute":
        correction = (f"Your previous answer was not usable: {problem}. Answer again with code-tool calls, or "
                      "exactly one of finish_step / delegate / navigate, with arguments matching the schema.")
    else:
        correction = corrective_suffix(problem).strip()
    answer = Message(role="assistant", content=resp.text, tool_calls=list(resp.tool_calls))
    messages = [*req.messages, answer, Message(role="user", content=correction)]
    added = resp.text + json.dumps([c.raw_arguments or c.args for c in resp.tool_calls]) + correction
    return req.model_copy(update={"messages": messages}), added


def _heartbeat(details: dict[str, Any]) -> None:
    if activity.in_activity():
        activity.heartbeat(details)


async def _heartbeat_forever() -> None:
    while True:
        if activity.in_activity():
            activity.heartbeat()
        await asyncio.sleep(HEARTBEAT_EVERY_S * 4)


def _repomap_count_tokens(text: str) -> int:
    from durable_navigator.repomap.tokens import count_tokens

    return int(count_tokens(text))
