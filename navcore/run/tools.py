"""Code tools the navigator model may call between map updates: calls, results, declarations.

Integration note
----------------
The model sees :data:`TOOL_DECLARATIONS` next to ``update_flight_plan`` /
``finalize_context`` (Gemini: ``types.FunctionDeclaration(name=...,
description=..., parameters_json_schema=...)`` for each). A function call
named in :data:`TOOL_NAMES` becomes a :class:`ToolCall`; the workflow runs
the activity :data:`TOOL_ACTIVITY` ``[call.name]`` (``activities/tools.py``,
class ``CodeToolActivities``) with a :class:`ToolRequest` and gets a
:class:`ToolResult` back — errors are results (``ok=False``), never raised, so
a bad path from the model cannot fail the workflow. Large output is in the
artifact store (``artifact_ref``); ``content`` is always a capped preview, so
``ToolResult`` is safe for history and for the next prompt.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from durable_navigator.navcore.run.artifacts import ArtifactRef

__all__ = [
    "ToolName",
    "TOOL_NAMES",
    "TOOL_ACTIVITY",
    "ToolLimits",
    "SearchArgs",
    "ReadFileArgs",
    "ListDirectoryArgs",
    "SymbolArgs",
    "ToolCall",
    "ToolRequest",
    "ToolResult",
    "TOOL_DECLARATIONS",
    "parse_tool_args",
]

ToolName = Literal["search_codebase", "read_file", "list_directory", "get_callers", "get_callees"]
TOOL_NAMES: tuple[str, ...] = ("search_codebase", "read_file", "list_directory", "get_callers", "get_callees")
#: stable activity names (public API: never rename)
TOOL_ACTIVITY: dict[str, str] = {name: f"tools.{name}" for name in TOOL_NAMES}


class ToolLimits(BaseModel):
    """Output caps of the code tools."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: characters of tool output returned inline, i.e. kept in workflow history;
    #: a longer output is stored whole as an artifact (the prompt builder reads it)
    max_inline_chars: int = Field(2000, ge=200, le=200_000)
    #: hard cap on one tool output, artifact included
    max_output_chars: int = Field(200_000, ge=1000, le=10_000_000)
    max_read_lines: int = Field(300, ge=1, le=20_000)
    max_search_results: int = Field(30, ge=1, le=500)
    max_dir_entries: int = Field(200, ge=1, le=20_000)
    max_refs: int = Field(100, ge=1, le=10_000)


_Path = Annotated[str, Field(min_length=1, max_length=1024)]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SearchArgs(_Args):
    """``search_codebase``: the definitions (function/class, with line range) that match a query."""

    query: Annotated[str, Field(min_length=1, max_length=500)]
    limit: int = Field(20, ge=1, le=500)


class ReadFileArgs(_Args):
    """``read_file``: a 1-based inclusive line range of one file."""

    path: _Path
    start_line: int = Field(1, ge=1)
    end_line: int | None = Field(None, ge=1)


class ListDirectoryArgs(_Args):
    """``list_directory``: indexed files and folders directly under ``path``."""

    path: _Path = "."


class SymbolArgs(_Args):
    """``get_callers`` / ``get_callees``: a qualified id ``path::Class.method`` or a bare name."""

    symbol: Annotated[str, Field(min_length=1, max_length=512)]


ARGS_MODEL: dict[str, type[_Args]] = {
    "search_codebase": SearchArgs,
    "read_file": ReadFileArgs,
    "list_directory": ListDirectoryArgs,
    "get_callers": SymbolArgs,
    "get_callees": SymbolArgs,
}


class ToolCall(BaseModel):
    """One tool call from the model (arguments as the model gave them)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: ToolName
    args: dict[str, Any] = {}

    def summary(self, step: int | None = None) -> str:
        """A readable one-liner for activity summaries, e.g. ``iter 4 · read_file src/a.py:10-40``."""
        a = self.args
        if self.name == "read_file":
            detail = f"{a.get('path', '?')}:{a.get('start_line', 1)}-{a.get('end_line', '')}".rstrip("-")
        elif self.name == "search_codebase":
            detail = repr(str(a.get("query", ""))[:60])
        elif self.name == "list_directory":
            detail = str(a.get("path", "."))
        else:
            detail = str(a.get("symbol", "?"))
        text = f"{self.name} {detail[:120]}"
        return f"iter {step} · {text}" if step is not None else text


class ToolRequest(BaseModel):
    """Input of every ``tools.*`` activity."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    repo_root: str
    call: ToolCall
    step: int = Field(0, ge=0)


class ToolResult(BaseModel):
    """Output of a tool: ok + capped content, or an error the model can act on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str
    ok: bool
    content: str = ""
    error: str | None = None
    #: the inline content is a capped preview of a larger output
    truncated: bool = False
    #: the full output, when it was too large to return inline
    artifact_ref: ArtifactRef | None = None
    #: the task queue only the answering host polls ("" if none): the run's next tools go there
    host_queue: str = ""
    #: one line for the Web UI / decision log
    summary: str = ""


def parse_tool_args(call: ToolCall) -> _Args:
    """Validate a call's arguments against its tool's model (raises pydantic ``ValidationError``)."""
    return ARGS_MODEL[call.name].model_validate(call.args)


_STR = {"type": "string"}
_INT = {"type": "integer"}

#: function declarations as JSON-schema data (provider-neutral)
TOOL_DECLARATIONS: tuple[dict[str, Any], ...] = (
    {
        "name": "search_codebase",
        "description": "Search the repository for the functions, methods and classes that match a query "
        "(BM25 over each definition's code, comments and name). Returns ranked 'path:start-end  score  "
        "path::Qualified.name' lines (a path alone: the file's module-level code).",
        "parameters": {
            "type": "object",
            "properties": {"query": {**_STR, "description": "words, identifiers or a symbol name"},
                           "limit": {**_INT, "description": "max results (default 20)"}},
            "required": ["query"],
        },
    },
    {
        "name": "read_file",
        "description": "Read a line range of one repository file (paths relative to the repository root).",
        "parameters": {
            "type": "object",
            "properties": {"path": _STR, "start_line": {**_INT, "description": "1-based, inclusive"},
                           "end_line": {**_INT, "description": "1-based, inclusive"}},
            "required": ["path"],
        },
    },
    {
        "name": "list_directory",
        "description": "List indexed files and sub-folders directly under a repository folder ('.' = root).",
        "parameters": {"type": "object", "properties": {"path": _STR}, "required": []},
    },
    {
        "name": "get_callers",
        "description": "Code sites that reference a definition, resolved through imports, scopes and types "
        "(never docs, comments or strings); sites that may mean another definition of the same name are "
        "listed apart. Symbol: 'path::Class.method' or a bare name.",
        "parameters": {"type": "object", "properties": {"symbol": _STR}, "required": ["symbol"]},
    },
    {
        "name": "get_callees",
        "description": "The repository definitions a definition's body calls or names, resolved through "
        "imports, scopes and types. Symbol: 'path::Class.method' or a bare name.",
        "parameters": {"type": "object", "properties": {"symbol": _STR}, "required": ["symbol"]},
    },
)
