"""MCP tool calls with fuzzed arguments, through the official SDK client, against ``navigator mcp`` (stdio).

One ``navigator mcp`` process is spawned the way a coding agent spawns it (same sandbox
environment, so it finds the fuzzing run's Temporal server); the client calls every tool and
resource with random arguments: wrong types, missing and unknown arguments, edge numbers, every
tree of the zoo, ids of real and missing runs, unknown tools and URIs. Some valid ``explore`` /
``ask`` calls are cancelled mid-run, as an agent does.

Per call: the answer arrives within its bound (else *stuck*), it is a result or a JSON-RPC error
(both fine) — a dropped connection or a server that died is a failure. At the end the server must
leave with exit code 0 when stdin closes and its stderr must hold no traceback.
"""

from __future__ import annotations

import json
import math
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from fuzz_exec import BIN, _TB
from fuzz_inputs import BAD_IDS, MODELS, TEXTS, Zoo

TOOLS = ["explore", "ask", "run_status", "stop_run", "list_runs"]
NUMBERS: list[Any] = [0, -1, 1, 89, 90, 91, 1500, 2**31, 2**63, -(2**70), 1.5, 1e-12, 1e308, 10_000, 10_001,
                      math.inf, math.nan, "100", "abc", "", True, None, [], {}]
STRINGS: list[Any] = [*TEXTS[:12], 1, None, True, [], {"a": 1}, 1.5]


@dataclass
class McpOutcome:
    """One MCP call."""

    index: int
    tool: str
    seconds: float
    kind: str  # "result", "tool-error", "rpc-error", "client-refused", "stuck", "broken"
    problems: list[str] = field(default_factory=list)
    arguments: str = ""


def _args(rng: random.Random, zoo: Zoo, ids: list[str], tool: str) -> dict[str, Any]:
    """Random arguments of ``tool`` (sometimes missing a required one, sometimes an unknown one)."""
    repo = rng.choice([zoo.tree(rng)] * 3 + [str(zoo.good_repo)] * 3 + STRINGS[12:])
    run_id = rng.choice([*BAD_IDS, *ids[-20:], *STRINGS[12:]]) if ids else rng.choice(BAD_IDS)
    table: dict[str, dict[str, Any]] = {
        "explore": {"repo": repo, "goal": rng.choice(STRINGS), "token_budget": rng.choice(NUMBERS),
                    "budget_usd": rng.choice(NUMBERS), "model": rng.choice([*MODELS, 1, None])},
        "ask": {"repo": repo, "question": rng.choice(STRINGS), "budget_usd": rng.choice(NUMBERS),
                "model": rng.choice([*MODELS, None])},
        "run_status": {"run_id": run_id},
        "stop_run": {"run_id": run_id, "reason": rng.choice([*STRINGS, "r" * 600])},
        "list_runs": {"repo": rng.choice([repo, None]), "limit": rng.choice(NUMBERS)},
    }
    args = {k: v for k, v in table.get(tool, {"x": 1}).items() if rng.random() < 0.75}
    if rng.random() < 0.1:
        args[rng.choice(["nope", "", "token_budget ", "REPO"])] = rng.choice(STRINGS)
    return args


def _wire(value: Any) -> Any:
    """``value`` as a UTF-8 client can send it: a lone surrogate (a non-UTF-8 byte of argv) becomes U+FFFD.

    JSON-RPC text is UTF-8; the SDK client cannot serialize a lone surrogate at all (its writer task dies
    and takes the session with it), so such a string never reaches a server.
    """
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {_wire(k): _wire(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_wire(v) for v in value]
    return value


def _valid(rng: random.Random, zoo: Zoo, tool: str) -> dict[str, Any]:
    if tool == "ask":
        return {"repo": str(zoo.good_repo), "question": rng.choice(TEXTS[7:9])}
    return {"repo": str(zoo.good_repo), "goal": rng.choice(TEXTS[7:9]), "token_budget": rng.choice([300, 1500])}


async def _one(client: Client, rng: random.Random, zoo: Zoo, ids: list[str], index: int,
               current: dict[str, Any]) -> McpOutcome:
    roll = rng.random()
    cancel_after: float | None = None
    if roll < 0.04:
        tool, args = rng.choice(["explore", "ask"]), {}
        args = _valid(rng, zoo, tool)
        cancel_after = rng.choice([None, 1.0, 3.0])
    elif roll < 0.1:
        tool = "resource"
        wid = rng.choice([*ids[-20:], *BAD_IDS[:8]]) if ids else rng.choice(BAD_IDS[:8])
        args = {"uri": rng.choice([f"navigator://runs/{wid}/{part}" for part in ("context", "answer", "report")]
                                  + ["navigator://runs//context", "file:///etc/passwd", "navigator://nope",
                                     f"navigator://runs/{wid}/../../x"])}
    elif roll < 0.13:
        tool, args = rng.choice(["nope", "", "Explore", "explore "]), {"repo": str(zoo.good_repo)}
    else:
        tool = rng.choice(TOOLS)
        args = _args(rng, zoo, ids, tool)
    args = _wire(args)
    bound = 300.0 if cancel_after is None and tool in ("explore", "ask") else 60.0
    started = time.monotonic()
    out = McpOutcome(index, tool, 0.0, "result", arguments=json.dumps(args, default=str)[:300])
    current.update(tool=tool, arguments=out.arguments, cancel_after=cancel_after)
    try:
        with anyio.fail_after(bound):
            if tool == "resource":
                await client.read_resource(args["uri"])
            elif cancel_after is not None:
                with anyio.move_on_after(cancel_after):
                    await client.call_tool(tool, args)
            else:
                result = await client.call_tool(tool, args)
                out.kind = "tool-error" if result.is_error else "result"
                structured = result.structured_content or {}
                if not result.is_error and isinstance(structured.get("run_id"), str):
                    ids.append(structured["run_id"])
    except MCPError:
        out.kind = "rpc-error"
    except TimeoutError:
        out.kind = "stuck"
        out.problems.append(f"stuck: no answer within {bound:.0f} s")
    except (ValueError, TypeError) as exc:  # the client itself refused to send it (e.g. NaN is not JSON)
        out.kind = "client-refused"
        out.arguments += f" ({type(exc).__name__}: {exc})"[:200]
    except Exception as exc:  # noqa: BLE001 - a broken connection is the finding
        out.kind = "broken"
        out.problems.append(f"broken: {type(exc).__name__}: {exc}"[:300])
    out.seconds = round(time.monotonic() - started, 3)
    return out


async def fuzz_mcp(env: dict[str, str], cwd: Path, zoo: Zoo, calls: int, seed: int,
                   ids: list[str]) -> tuple[list[McpOutcome], dict[str, Any]]:
    """``calls`` fuzzed calls over one stdio session; the outcomes and how the server ended."""
    rng = random.Random(seed)
    stderr_path = cwd / "mcp-server.stderr"
    params = StdioServerParameters(command=str(BIN / "navigator"), args=["mcp", "--out", str(cwd / "mcp-out")],
                                   env=dict(env), cwd=str(cwd))
    outcomes: list[McpOutcome] = []
    ended: dict[str, Any] = {}
    current: dict[str, Any] = {}
    with stderr_path.open("w") as errlog:
        try:
            async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=600) as client:
                for index in range(calls):
                    current["index"] = index
                    outcome = await _one(client, rng, zoo, ids, index, current)
                    outcomes.append(outcome)
                    if outcome.kind == "broken":
                        break
        except Exception as exc:  # noqa: BLE001 - the session itself broke
            import traceback

            ended["session_error"] = "".join(traceback.format_exception(exc))[-4000:]
            ended["during_call"] = dict(current)
    text = stderr_path.read_text(errors="replace")
    ended["stderr_traceback"] = bool(_TB.search(text))
    ended["stderr_tail"] = text[-1500:] if ended["stderr_traceback"] else ""
    return outcomes, ended
