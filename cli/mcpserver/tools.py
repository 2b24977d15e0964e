"""The MCP tools and resources of ``navigator mcp``.

Every tool is one method of :class:`NavigatorTools` marked with :func:`tool`;
:func:`build_server` registers whatever is marked, so a new tool is one decorated
method. ``explore`` runs the navigator workflow (a context pack), ``ask`` the research
workflow (a cited answer, as ``navigator ask``); ``run_status``, ``stop_run`` and
``list_runs`` take either kind of run. Arguments are typed and
bounded, so a bad one is refused by the SDK as a tool error before any work; a
domain error (a refused path, an unknown model, a run that does not exist) is a
tool error with the CLI's one-line message. Repository content only ever travels
back as the pack's text: nothing in it is interpreted here.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, ParamSpec, TypeVar

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from durable_navigator.activities.artifacts import ArtifactStore
from durable_navigator.cli.errors import RunNotFoundError, stderr
from durable_navigator.cli.preflight import refuse_unservable
from durable_navigator.cli.runrequest import build_request, build_research_request, new_run_id, validate_model
from durable_navigator.cli.mcpserver.backend import Backend
from durable_navigator.cli.mcpserver.cancel import client_cancelled
from durable_navigator.cli.mcpserver.models import AskOutcome, RunListing, RunOutcome, RunState, StopSent
from durable_navigator.cli.mcpserver.pack import answer_uri, context_uri, read_context, read_report
from durable_navigator.cli.mcpserver import runs
from durable_navigator.cli.preflight import IN_PROCESS, problems_here, problems_on_workers
from durable_navigator.cli.runinput import USD_RANGE, check_text, parse_usd
from durable_navigator.cli.sources import settled_source
from durable_navigator.navcore.run.budget import MAX_RUN_USD, MIN_RUN_USD
from durable_navigator.navcore.model.modelspec import parse_model_spec
from durable_navigator.navcore.navigator.requests import ExplorationResult
from durable_navigator.navcore.run_kinds import EXPLORE, RESEARCH
from durable_navigator.navcore.research.research import ResearchResult
from durable_navigator.navtypes.errors import NavigatorError
from durable_navigator.navtypes.flightplan import MAX_TOKEN_BUDGET, MIN_TOKEN_BUDGET

__all__ = ["NavigatorTools", "build_server", "tool", "SERVER_NAME", "INSTRUCTIONS", "CANCEL_REASON"]

SERVER_NAME = "durable-navigator"
INSTRUCTIONS = (
    "Builds the best context window of a code repository for a goal. Call explore with the repository's "
    "absolute path and what you need the context for; it returns a context pack (a repository map at the "
    "depth the goal needs, plus a summary) within token_budget. To have a question about the code answered "
    "instead, call ask: a research run that reads the code and returns an answer citing path:start-end lines. "
    "Runs are durable: if a call is interrupted, run_status(run_id) returns the finished pack or answer later."
)
#: the stop reason a client's cancellation records in the run
CANCEL_REASON = "cancelled by the MCP client"
#: how long a cancelled call may spend delivering its stop signal
STOP_TIMEOUT_S = 15

P = ParamSpec("P")
R = TypeVar("R")
_TOOL_MARK = "__navigator_tool__"


def tool(title: str, annotations: ToolAnnotations) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Awaitable[R]]]:
    """Mark a method of :class:`NavigatorTools` as an MCP tool (name = method name, description = docstring).

    Domain errors raised inside become tool errors (``isError``) carrying their one-line message.
    """

    def mark(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
        @functools.wraps(fn)
        async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return await fn(*args, **kwargs)
            except NavigatorError as exc:
                raise ToolError(str(exc)) from None

        setattr(wrapper, _TOOL_MARK, (title, annotations))
        return wrapper

    return mark


Repo = Annotated[str, Field(min_length=1, max_length=4096, description=(
    "Absolute path of the repository's root folder on the machine running this server."))]
RunId = Annotated[str, Field(min_length=1, max_length=300, description=(
    "Run id returned by explore, ask or list_runs."))]
# the bounds are advertised in the schema, not validated by the SDK: it would refuse an amount out
# of range with a many-line pydantic dump; the tools pass it to runinput.parse_usd, the check (and
# one-line message) of `navigator ask|explore`
_Usd = Annotated[float, Field(json_schema_extra={"minimum": float(MIN_RUN_USD), "maximum": float(MAX_RUN_USD)})]
BudgetUsd = Annotated[_Usd | None, Field(description=(
    f"Most USD the run may spend on model calls (a hard cap), {USD_RANGE}. Default: the server's configured "
    "budget. The offline model costs nothing."))]
Model = Annotated[str | None, Field(min_length=1, max_length=200, description=(
    "Model that steers the run: 'offline' (no network, free), 'gemini-2.5-flash', "
    "'openai:<model>', 'openrouter:<model>', 'ollama:<model>' or '<endpoint>:<model>' for an endpoint in "
    "the server's configuration. Default: the server's model."))]

_READS = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def _usd(budget_usd: float | None) -> str | None:
    """The client's budget checked as every surface checks it (one line when refused), or None for the default."""
    return None if budget_usd is None else str(parse_usd(repr(budget_usd), "budget_usd"))


def _result(text: str | None, structured: Any) -> CallToolResult:
    """Text the model reads (the pack, when there is one) + the structured data, also as JSON text."""
    data = structured.model_dump(mode="json")
    content = [TextContent(type="text", text=text)] if text else []
    content.append(TextContent(type="text", text=structured.model_dump_json(exclude_none=True)))
    return CallToolResult(content=content, structured_content=data)


async def _stop_for_cancel(session: Any, backend: Backend, run_id: str) -> None:
    """Send ``stop`` for a cancelled call (shielded: the call's own scope is cancelled); never raises."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(STOP_TIMEOUT_S):
        try:
            await runs.stop_run(session, backend.roots, run_id, CANCEL_REASON)
        except Exception as exc:  # noqa: BLE001 - it finished meanwhile, or Temporal is gone: the call ends cancelled
            stderr.print(f"navigator mcp: could not stop {run_id} after the client cancelled: {exc}", markup=False)
        return
    stderr.print(f"navigator mcp: could not stop {run_id} within {STOP_TIMEOUT_S} s after the client cancelled",
                 markup=False)


class NavigatorTools:
    """The tools, bound to one backend (Temporal session, allowed roots, output folder)."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    @tool("Explore a repository for a goal", ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=True))
    async def explore(
        self,
        repo: Repo,
        goal: Annotated[str, Field(min_length=1, max_length=8000, description=(
            "What the context is for, in a sentence: a question, a bug, or a change to make."))],
        ctx: Context,
        token_budget: Annotated[int | None, Field(ge=MIN_TOKEN_BUDGET, le=MAX_TOKEN_BUDGET, description=(
            "Most tokens (cl100k_base) the returned pack may hold. Default: the server's configured budget "
            "(8192 unless changed)."))] = None,
        budget_usd: BudgetUsd = None,
        model: Model = None,
    ) -> Annotated[CallToolResult, RunOutcome]:
        """Explore a repository for a goal and return its best context pack.

        A durable navigator run zooms a repository map in and out until the map answers the goal, then
        returns it as markdown: a summary, the stage plan and the map of the relevant code at the depth
        it needs, within token_budget. Takes seconds to minutes; progress is reported per step. The
        second text block and the structured result give run_id, cost_usd and stop_reason. Cancelling
        the call stops the run, which still finalizes its best map (run_status returns it).
        """
        backend = self.backend
        root = backend.roots.repository(repo)
        check_text(goal, "goal", "'how is the budget enforced?'")  # named as this tool's argument
        pack_tokens = token_budget or backend.config.defaults.token_budget
        if pack_tokens < MIN_TOKEN_BUDGET:
            raise NavigatorError(f"the configured token budget {pack_tokens} is below the smallest pack "
                                 f"({MIN_TOKEN_BUDGET} tokens); pass token_budget")
        chosen = self._model(model)
        session = await backend.session()
        request = build_request(
            root, goal, config=backend.config, interactive=False,
            budget_usd=_usd(budget_usd),
            tokens=pack_tokens, model=chosen, max_iterations=None, out=backend.out_dir,
        )  # fmt: skip
        await self._servable(session, request.models())  # the run's model and its routing rules' models
        request = await settled_source(backend.config, request)  # a snapshot when workers share no disk with us
        run_id = new_run_id(EXPLORE, root)
        handle = await runs.start_run(session, request, run_id)
        result = await self._follow(ctx, session, handle, request.max_iterations, research=False)
        outcome, text = runs.outcome_of(result, session.ui_link(run_id), session.artifact_store())
        return _result(text, outcome)

    @tool("Answer a question about a repository, with citations", ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=True))
    async def ask(
        self,
        repo: Repo,
        question: Annotated[str, Field(min_length=1, max_length=8000, description=(
            "The question about the code, e.g. 'why are tokens double-counted in budget enforcement?'"))],
        ctx: Context,
        budget_usd: BudgetUsd = None,
        model: Model = None,
    ) -> Annotated[CallToolResult, AskOutcome]:
        """Answer a question about a repository's code; every claim cites path:start-end lines.

        A durable research run (as `navigator ask`) plans what to read, reads and searches the code step by
        step, and writes an answer whose citations are each checked against the repository. Takes seconds
        to minutes; progress is reported per executor turn. The first text block is the answer (markdown);
        the second text block and the structured result give run_id, cost_usd, stop_reason and
        completed_normally. Cancelling the call stops the run, which still answers with what it found
        (run_status returns it).
        """
        backend = self.backend
        root = backend.roots.repository(repo)
        check_text(question, "question", "'how is the budget enforced?'")  # named as this tool's argument
        chosen = self._model(model)
        session = await backend.session()
        request = build_research_request(
            root, question, config=backend.config, interactive=False,
            budget_usd=_usd(budget_usd),
            model=chosen, out=backend.out_dir,
        )  # fmt: skip
        # the run's model and the models of the profiles its steps may be delegated to, as `navigator ask`
        await self._servable(session, sorted({request.model, *(p.model for p in request.profiles.values() if p.model)}))
        request = await settled_source(backend.config, request)
        run_id = new_run_id(RESEARCH, root)
        handle = await runs.start_research(session, request, run_id)
        result = await self._follow(ctx, session, handle, request.run_profile().safety.max_iterations, research=True)
        return _result(runs.answer_of(result, session.artifact_store()),
                       runs.ask_outcome_of(result, session.ui_link(run_id)))

    def _model(self, model: str | None) -> str:
        """The model a run uses; a scripted model's file must be under the allowed roots, like the repository."""
        chosen = (model or self.backend.config.model).strip()
        script = parse_model_spec(chosen, frozenset(self.backend.config.all_endpoints())).script
        if script:
            self.backend.roots.file(script, "the model's script")
        return chosen

    async def _servable(self, session: Any, models: list[str]) -> None:
        """Refuse a model the CLI would refuse, or one the worker(s) serving the run cannot serve."""
        config = self.backend.config
        for name in models:
            validate_model(name, config, session.in_process_worker)
        if session.in_process_worker:
            problems, where = problems_here(models, config), IN_PROCESS
        else:
            problems = await problems_on_workers(session, models)
            where = f"the worker(s) on task queue {session.task_queue!r}"
        for name in models:
            refuse_unservable(name, problems, where)

    async def _follow(self, ctx: Context, session: Any, handle: Any, cap: int, research: bool) -> Any:
        """Follow a started run to its result with a progress notification per step; a client's
        cancellation sends ``stop`` (a disconnect or the server's shutdown leaves the run to finish)."""

        async def report(progress: float, total: float | None, message: str) -> None:
            await ctx.report_progress(progress, total, message)

        try:
            return await runs.follow_run(handle, report, cap, research, session.client)
        except anyio.get_cancelled_exc_class():
            if client_cancelled(ctx, self.backend.closing):
                await _stop_for_cancel(session, self.backend, handle.id)
            raise

    @tool("Status of a navigator run", _READS)
    async def run_status(self, run_id: RunId) -> Annotated[CallToolResult, RunState]:
        """Where a run is: step, cost and map size while it runs; once finished, its outcome and its text.

        The text is an exploration's context pack or a research run's cited answer (kind says which). Use it
        to pick up a run whose explore or ask call was interrupted: a run keeps going (durably) when the
        client disconnects, and this returns its pack or answer when it is done.
        """
        session = await self.backend.session()
        state, text = await runs.run_state(session, self.backend.roots, run_id)
        return _result(text, state)

    @tool("Stop a navigator run", ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False))
    async def stop_run(
        self,
        run_id: RunId,
        reason: Annotated[str, Field(max_length=500, description="Why, for the run's decision log.")] = "stopped by the MCP client",
    ) -> StopSent:
        """Stop a running exploration or research run now: it finishes as 'stopped' with what it has (an
        exploration finalizes its best map, a research run answers from its findings so far)."""
        session = await self.backend.session()
        await runs.stop_run(session, self.backend.roots, run_id, reason)
        return StopSent(run_id=run_id, note="the run finishes with what it has; run_status returns its pack or answer")

    @tool("List navigator runs", _READS)
    async def list_runs(
        self,
        repo: Annotated[str | None, Field(max_length=4096, description=(
            "Only runs of this repository (absolute path). Default: every repository the server may read."))] = None,
        limit: Annotated[int, Field(ge=1, le=200, description="At most this many runs, newest first.")] = 20,
    ) -> RunListing:
        """List navigator runs (explorations and research runs), newest first: id, kind, state, repository,
        goal or question, cost."""
        root = str(self.backend.roots.repository(repo)) if repo else None
        session = await self.backend.session()
        return RunListing(runs=await runs.list_runs(session, self.backend.roots, root, limit))

    # -- resources -------------------------------------------------------

    async def context_resource(self, run_id: str) -> str:
        """The whole context.md of a finished exploration."""
        result = await self._finished(run_id)
        if not isinstance(result, ExplorationResult):
            raise ResourceNotFoundError(f"{run_id} is a research run: it has no context pack; its answer is "
                                        f"{answer_uri(run_id)}")
        return await self._read(read_context, result)

    async def answer_resource(self, run_id: str) -> str:
        """The whole answer.md of a finished research run."""
        result = await self._finished(run_id)
        if not isinstance(result, ResearchResult):
            raise ResourceNotFoundError(f"{run_id} is an exploration: it has no answer; its context pack is "
                                        f"{context_uri(run_id)}")
        return await self._read(runs.answer_of, result)

    async def report_resource(self, run_id: str) -> str:
        """The report.json of a finished run (either kind)."""
        return await self._read(read_report, await self._finished(run_id))

    async def _read(self, reader: Callable[[Any, ArtifactStore], str], result: Any) -> str:
        try:
            return reader(result, (await self.backend.session()).artifact_store())
        except NavigatorError as exc:
            raise ResourceError(str(exc)) from None

    async def _finished(self, run_id: str) -> Any:
        try:
            session = await self.backend.session()
            result, _ = await runs.finished_result(session, self.backend.roots, run_id)
        except RunNotFoundError as exc:
            raise ResourceNotFoundError(str(exc)) from None
        except NavigatorError as exc:
            raise ResourceError(str(exc)) from None
        return result


def _marked(tools: NavigatorTools) -> list[tuple[str, Callable[..., Any], str, ToolAnnotations]]:
    found = []
    for name, member in inspect.getmembers(tools, inspect.ismethod):
        mark = getattr(member, _TOOL_MARK, None)
        if mark is not None:
            found.append((name, member, *mark))
    return found


def build_server(backend: Backend, version: str = "") -> MCPServer:
    """The MCP server: every marked tool, and the resources of a finished run (context or answer, report)."""
    server: MCPServer = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS, version=version, log_level="WARNING")
    tools = NavigatorTools(backend)
    for name, method, title, hints in _marked(tools):
        server.add_tool(method, name=name, title=title, description=inspect.getdoc(method), annotations=hints)
    server.resource("navigator://runs/{run_id}/context", name="context", title="Context pack of a run",
                    description="The whole context.md of a finished exploration (markdown).",
                    mime_type="text/markdown")(tools.context_resource)
    server.resource("navigator://runs/{run_id}/answer", name="answer", title="Answer of a research run",
                    description="The whole answer.md of a finished research run (markdown, citations path:start-end).",
                    mime_type="text/markdown")(tools.answer_resource)
    server.resource("navigator://runs/{run_id}/report", name="report", title="Report of a run",
                    description="report.json of a finished run: cost, tokens, decisions, why it stopped.",
                    mime_type="application/json")(tools.report_resource)
    return server
