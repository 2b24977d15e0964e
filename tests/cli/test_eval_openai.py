"""``navigator eval --model local:…`` through the real client path: the ``navigator`` console script as a
process (its embedded Temporal server and in-process worker), the ``openai`` client in the worker, and a
scripted OpenAI-compatible server process (``tests/support/openai_server.py``) on a loopback port.

The eval completes, its report names the model and its prices, the USD it books is exactly what the
server reported at the endpoint's prices, and under a cap smaller than the runs would cost the batch
never spends past it (a run that meets the cap stops there and is scored, not skipped).
"""

from __future__ import annotations

import json
import subprocess
from decimal import Decimal
from pathlib import Path

from tests.cli.test_explore_openai import MODEL, SECRET, _cost, _endpoint_yaml
from tests.support.e2e import NAVIGATOR, Sandbox
from tests.support.evalrepo import make_eval_repo
from tests.support.openai_server import LocalServer

from durable_navigator.workers.devserver import port_in_use

ZOOM = {"reasoning": "the fee is computed in shipping.py; show it in full",
        "updates": {"set_rules": [{"glob": "shop/shipping.py", "level": 4}]}}


def _replies(explorations: int) -> list[dict]:
    """What one eval exploration asks for (a batch job runs the loop without a planning phase: a zoom, then
    finalize), ``explorations`` times."""
    one = [
        {"when": "tools", "tool_calls": [{"name": "update_flight_plan", "arguments": ZOOM}],
         "usage": {"prompt_tokens": 2600, "completion_tokens": 64, "prompt_tokens_details": {"cached_tokens": 1200}}},
        {"when": "tools", "tool_calls": [{"name": "finalize_context",
                                          "arguments": {"summary": "shipping_fee sets the weight rate"}}],
         "usage": {"prompt_tokens": 3000, "completion_tokens": 50,
                   "completion_tokens_details": {"reasoning_tokens": 20}}},
    ]
    return one * explorations


def _eval(tmp_path: Path, box: Sandbox, repo: Path, out: str, budget_usd: str) -> subprocess.CompletedProcess[str]:
    env = {**box.env(), "LOCAL_LLM_KEY": SECRET}
    return subprocess.run([str(NAVIGATOR), "eval", str(repo), "--model", MODEL, "--tasks", "2", "--tokens", "1024",
                           "--concurrency", "1", "--budget-usd", budget_usd, "--out", str(tmp_path / out)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


def test_eval_with_an_openai_compatible_model_books_what_the_server_reported(tmp_path: Path) -> None:
    box = Sandbox.create(tmp_path)
    repo = tmp_path / "shop"
    make_eval_repo(repo)
    with LocalServer(tmp_path, _replies(2)) as llm:
        config = tmp_path / "navigator.yaml"
        config.write_text(config.read_text() + "endpoints:\n" + _endpoint_yaml(llm.base_url))
        proc = _eval(tmp_path, box, repo, "ev", "1.00")
        served = llm.requests()
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((tmp_path / "ev" / "eval.json").read_text())
    assert report["models"] == [MODEL] and report["prices"] == {MODEL: "1.0 / 2.0"}
    nav = [s for r in report["tasks"] for s in r["scores"] if s["method"] == f"navigator:{MODEL}"]
    assert len(nav) == 2 and all(s["status"] == "completed" and s["stop_reason"] == "finalized" for s in nav), nav
    # every scripted answer was asked for over the socket, with the key only in its header
    assert len(served) == 4 and all(r["reply"] is not None for r in served)
    assert all(r["authorization"] == f"Bearer {SECRET}" and r["body"]["model"] == "qwen2.5-coder:7b" for r in served)
    # the eval booked exactly what the server reported, at the endpoint's prices: in total and per run
    expected = sum(_cost(r["reply"]["usage"]) for r in served)
    assert Decimal(str(report["spent_usd"])) == Decimal(expected) / 1_000_000
    assert sum(round(s["cost_usd"] * 1e6) for s in nav) == expected
    md = (tmp_path / "ev" / "eval.md").read_text()
    assert f"**models**: {MODEL}" in md and f"{MODEL}: 1.0 / 2.0" in md
    for text in (proc.stdout, proc.stderr, md, (tmp_path / "ev" / "eval.json").read_text()):
        assert SECRET not in text
    assert not port_in_use("127.0.0.1", box.port)


def test_eval_with_an_openai_compatible_model_never_spends_past_its_cap(tmp_path: Path) -> None:
    box = Sandbox.create(tmp_path)
    repo = tmp_path / "shop"
    make_eval_repo(repo)
    # each call is reserved at about $0.0117 before it runs and one exploration costs $0.005268: under
    # $0.025 the first job's slice ($0.0125) pays its first call and cannot reserve its second
    cap = Decimal("0.025")
    with LocalServer(tmp_path, _replies(2)) as llm:
        config = tmp_path / "navigator.yaml"
        config.write_text(config.read_text() + "endpoints:\n" + _endpoint_yaml(llm.base_url))
        proc = _eval(tmp_path, box, repo, "ev", str(cap))
        served = llm.requests()
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((tmp_path / "ev" / "eval.json").read_text())
    nav = [s for r in report["tasks"] for s in r["scores"] if s["method"] == f"navigator:{MODEL}"]
    # the cap refused calls the server would have answered: a run stopped on it, and is scored, not skipped
    assert len(served) < 4 and all(r["reply"] is not None for r in served)
    assert len(nav) == 2 and "budget_exhausted" in {s["stop_reason"] for s in nav}, nav
    assert all(s["status"] == "completed" for s in nav) and report["totals"][0]["tasks"] == 2
    # what was booked is what the server reported, and never more than the cap: in total and per run
    expected = sum(_cost(r["reply"]["usage"]) for r in served)
    assert Decimal(str(report["spent_usd"])) == Decimal(expected) / 1_000_000 <= cap
    assert sum(round(s["cost_usd"] * 1e6) for s in nav) == expected
    for path in (tmp_path / "ev" / "runs").glob("*/*/report.json"):
        run = json.loads(path.read_text())
        assert Decimal(run["cost_usd"]) <= Decimal(run["max_usd"]), path
