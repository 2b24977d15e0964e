"""Decision-log compression inside NavigatorWorkflow over a long scripted run.

A 200-iteration run (continuing as new several times) must keep the prompt
bounded: past the threshold the older log entries become one summary entry
(``navigator.compress`` through the offline text model), priced in the
ledger, and the prompt quotes that summary at the compression cap rather
than the per-decision cap.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from tests.support.navigator import ScriptProvider, update
from tests.support.navigator import make_activities, make_request

from durable_navigator.navcore.run.compression import CompressionConfig
from durable_navigator.navcore.navigator.guardrails import LoopConfig, RunProfile, SafetyConfig
from durable_navigator.navcore.navigator.prompt import RECENT_REASONING_CHARS
from durable_navigator.navcore.navigator.state import StopReason
from durable_navigator.repomap.tokens import count_tokens
from durable_navigator.workflows.navigator import NavigatorWorkflow

ITERATIONS = 200
#: each step moves one rule to a new file: plans never repeat and the plan stays one rule long
STEPS = [
    update(set_rules=[{"glob": f"src/budgetkit/part{i}.py", "level": 2}], remove_rules=[f"src/budgetkit/part{i - 1}.py"])
    for i in range(ITERATIONS)
]
PROFILE = RunProfile(
    loop=LoopConfig(warn_repeats=49, stop_repeats=50, window=50),
    safety=SafetyConfig(max_iterations=ITERATIONS, max_stage_iterations=ITERATIONS, max_activities=5000),
    compression=CompressionConfig(threshold=30, keep_last=10),
)


async def test_compression_keeps_the_prompt_bounded_over_200_iterations(
    client, task_queue, start_worker, tmp_path
) -> None:
    provider = ScriptProvider(steps=STEPS, offline_text=True)  # the offline planner writes the summaries
    req = make_request(tmp_path, max_iterations=ITERATIONS, profile=PROFILE, continue_as_new_events=1500)
    wf_id = f"nav-compress-{uuid.uuid4()}"
    async with start_worker(make_activities(tmp_path, provider)):
        result = await client.execute_workflow(
            NavigatorWorkflow.run, req, id=wf_id, task_queue=task_queue, execution_timeout=timedelta(seconds=150)
        )
        log = await client.get_workflow_handle(wf_id).query(NavigatorWorkflow.get_decision_log)
    assert result.stop_reason is StopReason.MAX_ITERATIONS and result.iterations == ITERATIONS
    assert result.continued_runs >= 1
    # the log holds summaries + at most threshold entries, never 200
    assert len(log.entries) <= PROFILE.compression.threshold + 1
    summaries = [e for e in log.entries if e.action == "summary"]
    assert summaries and summaries[0].diff_lines[0].startswith("covers steps 1–")
    # cost totals survive compression: the summaries carry what they replaced
    assert sum(e.cost_micros for e in log.entries) <= result.cost_micros
    sizes = [count_tokens(p) for p in provider.prompts]
    late = sizes[50:]
    print(f"\nprompt tokens over {len(sizes)} prompts: first {sizes[0]}, max {max(sizes)}, "
          f"max after step 50 {max(late)}, last {sizes[-1]}; log entries at the end {len(log.entries)}")
    # bounded: the late prompts are no bigger than the ones right after the first compression
    assert max(late) <= max(sizes[30:50]) + 200
    quoted = [p for p in provider.prompts if "- steps up to" in p]
    assert quoted, "the summary entry never reached the prompt"
    line = next(ln for ln in quoted[-1].splitlines() if ln.startswith("- steps up to"))
    # a summary is quoted at the compression cap, not the 240-character per-decision cap
    assert len(line) > RECENT_REASONING_CHARS + 40
