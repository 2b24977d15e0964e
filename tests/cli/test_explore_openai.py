"""``navigator explore --model local:...`` against a real OpenAI-compatible server process.

The server (``tests/support/openai_server.py``) is a separate process on a free
loopback port speaking the chat-completions protocol with scripted answers;
the ``navigator`` console script runs as a process too, with the endpoint
named in its ``navigator.yaml``. What is real: the protocol, the socket, the
``openai`` client in the worker, Temporal. The run must finalize, book exactly
what the server reported at the endpoint's declared prices, write it into
``report.json``, and never let the key out of the worker.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from decimal import Decimal
from pathlib import Path

from temporalio.client import Client

from durable_navigator.workers.devserver import port_in_use
from tests.cli.test_refusals import _decoded, _one_error_line, _runs_on
from tests.support.cli import FIXTURE_REPO
from tests.support.e2e import NAVIGATOR, Sandbox, wait_until_polling
from tests.support.openai_server import LocalServer

GOAL = "why are tokens double-counted in budget enforcement?"
MODEL = "local:qwen2.5-coder:7b"
SECRET = "sk-local-e2e-canary-5e8a1f0c"
#: USD per million tokens = micro-dollars per token
RATES = {"input": Decimal("1"), "output": Decimal("2"), "cached": Decimal("0.5"), "thinking": Decimal("4")}
ZOOM = {"reasoning": "the ledger books usage; show it in full",
        "updates": {"set_rules": [{"glob": "src/budgetkit/ledger.py", "level": 4}]}}
REPLIES = [
    {"when": "Decide whether a plan is needed", "text": "DIRECT: one place, the ledger",
     "usage": {"prompt_tokens": 1800, "completion_tokens": 12}},
    {"when": "tools", "tool_calls": [{"name": "update_flight_plan", "arguments": ZOOM}],
     "usage": {"prompt_tokens": 2600, "completion_tokens": 64, "prompt_tokens_details": {"cached_tokens": 1200}}},
    {"when": "tools", "tool_calls": [{"name": "finalize_context",
                                      "arguments": {"summary": "ledger.py records streamed usage twice"}}],
     "usage": {"prompt_tokens": 3000, "completion_tokens": 50, "completion_tokens_details": {"reasoning_tokens": 20}}},
    {"when": "Check the success criteria", "text": "C1: MET | src/budgetkit/ledger.py is shown at L4",
     "usage": {"prompt_tokens": 1500, "completion_tokens": 14}},
]


def _endpoint_yaml(base_url: str, name: str = "local", key_env: str | None = "LOCAL_LLM_KEY",
                   priced: bool = True) -> str:
    prices = ('    prices:\n      "*": {input: 1.0, output: 2.0, cached: 0.5, thinking: 4.0}\n' if priced else "")
    key = f"    api_key_env: {key_env}\n" if key_env else ""
    return f"  {name}:\n    base_url: {base_url}\n{key}{prices}"


def _cost(usage: dict) -> int:
    """What the navigator must book for one served usage (cached in input, reasoning in completion)."""
    cached = usage.get("prompt_tokens_details", {}).get("cached_tokens", 0)
    reasoning = usage.get("completion_tokens_details", {}).get("reasoning_tokens", 0)
    micros = ((usage["prompt_tokens"] - cached) * RATES["input"] + cached * RATES["cached"]
              + (usage["completion_tokens"] - reasoning) * RATES["output"] + reasoning * RATES["thinking"])
    assert micros == int(micros)
    return int(micros)


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TEMPORAL_", "NAVIGATOR_", "GEMINI_", "GOOGLE_", "OPENAI_", "OPENROUTER_"))}
    return {**env, "COLUMNS": "200", **extra}


def test_explore_runs_on_a_local_openai_compatible_server(tmp_path: Path) -> None:
    box = Sandbox.create(tmp_path)
    with LocalServer(tmp_path, REPLIES) as llm:
        config = tmp_path / "navigator.yaml"
        config.write_text(config.read_text() + "endpoints:\n" + _endpoint_yaml(llm.base_url))
        env = {**box.env(), "LOCAL_LLM_KEY": SECRET}
        shown = subprocess.run([str(NAVIGATOR), "config", "show"], cwd=tmp_path, env=env, capture_output=True,
                               text=True, timeout=60)
        proc = subprocess.run(
            [str(NAVIGATOR), "explore", str(FIXTURE_REPO), GOAL, "--model", MODEL, "--max-iterations", "4",
             "--json", "--out", str(tmp_path / "out")],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
        )
        served = llm.requests()
    assert shown.returncode == 0, shown.stderr
    assert re.search(rf"local: {re.escape(llm.base_url)} · LOCAL_LLM_KEY set · tool calling native · "
                     r"prices: every model · navigator.yaml", shown.stdout), shown.stdout
    assert SECRET not in shown.stdout
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["stop_reason"] == "finalized", result

    # every scripted answer was asked for, over the socket, with the key only in its header
    assert len(served) == len(REPLIES) and all(r["reply"] is not None for r in served)
    assert all(r["authorization"] == f"Bearer {SECRET}" for r in served)
    assert all(r["body"]["model"] == "qwen2.5-coder:7b" and r["body"]["stream"] for r in served)
    assert [bool(r["body"].get("tools")) for r in served] == [False, True, True, False]

    # the run spent exactly what the server reported, at the endpoint's declared prices
    expected = sum(_cost(r["reply"]["usage"]) for r in served)
    assert result["cost_micros"] == expected
    report_path = Path(result["report_path"])
    report = json.loads(report_path.read_text())
    assert Decimal(report["cost_usd"]) == Decimal(expected) / 1_000_000
    totals = report["ledger"]["per_model"][MODEL]
    usages = [r["reply"]["usage"] for r in served]
    assert totals["input_tokens"] == sum(u["prompt_tokens"] for u in usages)
    assert totals["cached_tokens"] == 1200 and totals["thinking_tokens"] == 20
    assert totals["output_tokens"] == sum(u["completion_tokens"] for u in usages) - 20
    assert totals["calls"] == 4 and totals["cost_micros"] == expected
    assert report["prices"][MODEL]["input"] == "1.0" and report["model"] == MODEL

    # the key stayed in the worker: not in the outputs, the CLI's streams, or the server's database
    for text in (proc.stdout, proc.stderr, report_path.read_text(), (report_path.parent / "context.md").read_text()):
        assert SECRET not in text
    assert SECRET.encode() not in (tmp_path / "state" / "temporal.db").read_bytes()
    assert not port_in_use("127.0.0.1", box.port)


def test_refused_up_front_unknown_endpoint_missing_key_unpriced_model(tmp_path: Path) -> None:
    box = Sandbox.create(tmp_path)
    config = tmp_path / "navigator.yaml"
    config.write_text(config.read_text() + "endpoints:\n" + _endpoint_yaml("http://127.0.0.1:9/v1")
                      + _endpoint_yaml("http://127.0.0.1:9/v1", name="vllm", key_env=None, priced=False))
    out = tmp_path / "out"
    cases = [
        (["--model", "lmstudio:qwen"], "Error: unknown model endpoint 'lmstudio' in 'lmstudio:qwen'; use one of "
                                       "local, ollama, openai, openrouter, vllm, or name it under 'endpoints:' in "
                                       "navigator.yaml\n"),
        (["--model", MODEL], f"Error: model '{MODEL}' cannot be served by the in-process worker: endpoint 'local' "
                             "needs its API key in LOCAL_LLM_KEY on the worker: set it in the worker's environment"),
        (["--model", "vllm:qwen"], "Error: model 'vllm:qwen' has no price; declare it in navigator.yaml, e.g. "
                                   "endpoints: {vllm: {prices: {'qwen': {input: 0, output: 0}}}}"),
        (["--model", "openai:gpt-4.1-mini"], "Error: model 'openai:gpt-4.1-mini' cannot be served by the in-process "
                                             "worker: endpoint 'openai' needs its API key in OPENAI_API_KEY"),
    ]
    for args, expected in cases:
        proc = subprocess.run([str(NAVIGATOR), "explore", str(FIXTURE_REPO), GOAL, *args, "--out", str(out)],
                              cwd=tmp_path, env=box.env(), capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, proc.stderr
        assert _one_error_line(proc.stderr).startswith(expected), proc.stderr
        # "up front" is what was left behind, not how long it took: no embedded server was started (its
        # port is free and it never created its database), so no workflow, and no output folder
        assert not port_in_use("127.0.0.1", box.port), args
        assert not (tmp_path / "state").exists() and not out.exists(), args
    # navigator ask checks the same models against the same navigator.yaml endpoints
    for args, expected in cases[1:3]:
        proc = subprocess.run([str(NAVIGATOR), "ask", str(FIXTURE_REPO), GOAL, *args, "--out", str(out)],
                              cwd=tmp_path, env=box.env(), capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, proc.stderr
        assert _one_error_line(proc.stderr).startswith(expected), proc.stderr
    # nothing started: no server, no database, no output
    assert not port_in_use("127.0.0.1", box.port)
    assert not (tmp_path / "state").exists() and not out.exists()
    # a key in the file is refused, naming the setting to use instead
    config.write_text(config.read_text().replace("    api_key_env: LOCAL_LLM_KEY\n", f"    api_key: {SECRET}\n"))
    proc = subprocess.run([str(NAVIGATOR), "config", "show"], cwd=tmp_path, env=box.env(), capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    assert "endpoints.local.api_key must not be stored in a file; set endpoints.local.api_key_env" in proc.stderr
    assert SECRET not in proc.stderr + proc.stdout


async def test_a_remote_worker_reads_the_key_from_its_own_environment(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """``navigator worker`` (with the key) serves ``navigator explore`` (without it) on a shared server."""
    with LocalServer(tmp_path, REPLIES) as llm:
        config = tmp_path / "navigator.yaml"
        config.write_text("endpoints:\n" + _endpoint_yaml(llm.base_url)
                          + _endpoint_yaml(llm.base_url, name="other", key_env="OTHER_LLM_KEY"))
        shared = {"TEMPORAL_ADDRESS": client.service_client.config.target_host, "NAVIGATOR_TASK_QUEUE": task_queue,
                  "NAVIGATOR_CONFIG": str(config), "XDG_CACHE_HOME": str(tmp_path / "xdg-cache")}
        worker = subprocess.Popen([str(NAVIGATOR), "worker"], cwd=tmp_path, env=_clean_env(**shared,
                                  LOCAL_LLM_KEY=SECRET), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            # a running remote worker is the scenario: the CLI must not race the worker's start-up
            await wait_until_polling(client, task_queue, worker)
            cli_env = _clean_env(**shared)
            # the worker has no key for "other": its answer refuses the run before anything starts
            refused = subprocess.run([str(NAVIGATOR), "explore", str(FIXTURE_REPO), GOAL, "--model", "other:qwen",
                                      "--out", str(tmp_path / "out")],
                                     cwd=tmp_path, env=cli_env, capture_output=True, text=True, timeout=120)
            assert refused.returncode == 2, refused.stderr
            assert _one_error_line(refused.stderr).startswith(
                f"Error: model 'other:qwen' cannot be served by the worker(s) on task queue '{task_queue}': "
                "endpoint 'other' needs its API key in OTHER_LLM_KEY on the worker")
            assert await _runs_on(client, task_queue, "NavigatorWorkflow") == []
            proc = subprocess.run([str(NAVIGATOR), "explore", str(FIXTURE_REPO), GOAL, "--model", MODEL, "--json",
                                   "--max-iterations", "4", "--out", str(tmp_path / "out")],
                                  cwd=tmp_path, env=cli_env, capture_output=True, text=True, timeout=300)
        finally:
            worker.send_signal(signal.SIGTERM)  # ours, by its PID
            worker_out, worker_err = worker.communicate(timeout=60)
        served = llm.requests()
    assert proc.returncode == 0, proc.stderr[-3000:] + worker_err[-3000:]
    result = json.loads(proc.stdout)
    assert result["stop_reason"] == "finalized"
    assert result["cost_micros"] == sum(_cost(r["reply"]["usage"]) for r in served)
    assert all(r["authorization"] == f"Bearer {SECRET}" for r in served)
    history = _decoded(await client.get_workflow_handle(result["workflow_id"]).fetch_history())
    assert MODEL in history and SECRET not in history
    for text in (proc.stdout, proc.stderr, worker_out, worker_err):
        assert SECRET not in text
