"""Compression keeps the decision log (and the prompt quoting it) bounded over long runs."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import pytest
from tests.support.models import goal_ref, real_model_activities, run_spec

from durable_navigator.navcore.navigator.model_calls import CompressSpec, SummaryOut
from durable_navigator.navcore.run.compression import (
    CompressionConfig,
    LogEntry,
    build_summary_request,
    enforce_hard_cap,
    merge_summary,
    needs_compression,
    render_log,
    truncate_entries,
    truncate_text,
)
from durable_navigator.navtypes.flightplan import FlightPlan
from durable_navigator.navcore.navigator.guardrails import GuardrailState, RunProfile, RunProgress, check_guardrails
from durable_navigator.navtypes.mapmeta import MapMetadata
from durable_navigator.navcore.navigator.prompt import SYSTEM_PROMPT, PromptParts, build_user_prompt
from durable_navigator.navcore.navigator.state import DecisionLogEntry
from durable_navigator.repomap.tokens import count_tokens

GOAL = "why are tokens double-counted in budget enforcement?"
ITERATIONS = 200


def _entry(step: int) -> DecisionLogEntry:
    # Deterministic, varied sizes; every 17th reasoning is far over the entry cap.
    size = 6000 if step % 17 == 0 else 150 + (step * 37) % 900
    words = (f"step{step} zoom into src/area{step % 7}/module.py because budget tokens " * 200)[:size]
    return DecisionLogEntry(
        step=step,
        action="update_flight_plan" if step % 5 else "invalid",
        reasoning=words,
        diff_lines=[f"+ rule src/area{step % 7}/** → L{2 + step % 3}", f"+ focus area{step % 7}"],
        cost_micros=100 + step,
        input_tokens=1000 + step,
        output_tokens=50,
        at=datetime(2026, 1, 1, tzinfo=timezone.utc),
    )


MAP_TEXT = "\n".join(f"src/area{i % 7}/module{i}.py\n  def handler{i}(request) -> Response  # L{i}" for i in range(60))
META = MapMetadata(tokens_used=1500, token_budget=4096, files_total=60)
PROFILE = RunProfile()


def _full_prompt(step: int, entries: list[DecisionLogEntry]) -> str:
    """What the navigator would send at ``step``: quoting the whole (compressed) log."""
    notes = check_guardrails(PROFILE, GuardrailState(), RunProgress(goal=GOAL, iteration=min(step, 40))).prompt_notes
    parts = PromptParts(
        goal=GOAL, step=step, max_iterations=ITERATIONS, flight_plan=FlightPlan(), map_text=MAP_TEXT,
        metadata=META, spent_micros=step * 100, max_micros=1_000_000,
        recent=[(e.step, e.action, e.reasoning, e.diff_lines, None) for e in entries],
        feedback="\n".join(notes),
    )
    return SYSTEM_PROMPT + build_user_prompt(parts)


def _build(fields: dict[str, Any]) -> DecisionLogEntry:
    return DecisionLogEntry(**fields, at=datetime(2026, 1, 1, tzinfo=timezone.utc))


def test_truncate_text_marks_and_respects_cap() -> None:
    out = truncate_text("x" * 5000, 300)
    assert len(out) <= 300 and out.endswith("chars]") and "truncated 47" in out
    assert truncate_text("short", 300) == "short"


def test_decision_log_entry_maps_onto_log_entry() -> None:
    e = _entry(3)
    mapped = LogEntry.model_validate(e.model_dump())
    assert (mapped.step, mapped.action, mapped.cost_micros, mapped.diff_lines) == (3, e.action, e.cost_micros, e.diff_lines)


async def test_prompt_bounded_over_200_iterations(tmp_path) -> None:
    cfg = CompressionConfig()  # threshold 30, keep last 10
    acts = real_model_activities(tmp_path)  # the offline summary needs no repository engine
    goal = goal_ref(acts, GOAL)
    entries: list[DecisionLogEntry] = []
    uncompressed_chars = 0
    peak_prompt = ""
    max_input_bytes = 0
    sizes: list[int] = []
    compressions = 0
    total_cost = 0
    for step in range(1, ITERATIONS + 1):
        new = _entry(step)
        total_cost += new.cost_micros
        uncompressed_chars += len(new.reasoning) + sum(map(len, new.diff_lines))
        entries = truncate_entries([*entries, new], cfg)
        if needs_compression(entries, cfg):
            req = build_summary_request(entries, cfg)
            spec = CompressSpec(model="offline", repo_root="/nonexistent-repo-not-read", goal_ref=goal,
                                max_output_tokens=req.max_output_tokens, request=req, ordinal=compressions)
            max_input_bytes = max(max_input_bytes, len(spec.model_dump_json()))
            res = await run_spec(acts, "offline", spec)
            assert not isinstance(res, Exception) and isinstance(res.result, SummaryOut) and res.spent.calls == 1
            entries = merge_summary(entries, req, res.result.summary, _build, cfg)
            compressions += 1
        entries = enforce_hard_cap(entries, cfg, _build)
        assert len(entries) <= cfg.threshold
        prompt = _full_prompt(step, entries)
        if not sizes or len(prompt) > max(sizes):
            peak_prompt = prompt
        sizes.append(len(prompt))
    state_bytes = len(json.dumps([e.model_dump(mode="json") for e in entries]))
    print(
        f"\n[compression] {ITERATIONS} iterations, {compressions} compressions: max prompt "
        f"{max(sizes)} chars / {count_tokens(peak_prompt)} tokens at step {sizes.index(max(sizes)) + 1} "
        f"(system + user prompt with a {len(MAP_TEXT)}-char map, guardrail notes and the whole compressed log); "
        f"uncompressed log alone would be {uncompressed_chars} chars; "
        f"final log {len(entries)} entries, {state_bytes} bytes of state; "
        f"largest navigator.compress input {max_input_bytes} bytes"
    )
    assert compressions >= 8
    assert max_input_bytes < 20_000  # history cost of one compression, amortised over ~20 iterations
    # Bounded: the second half of the run is no bigger than the first half's peak plus one summary.
    assert max(sizes[100:]) <= max(sizes[:100]) + cfg.summary_text_cap
    assert max(sizes) < uncompressed_chars / 5
    assert max(sizes) < 30_000  # a fixed ceiling, whatever the run length
    # Cost is conserved by summaries; the summary chain keeps the earliest steps.
    assert sum(e.cost_micros for e in entries) == total_cost
    assert entries[0].action == "summary" and entries[0].diff_lines[0].startswith("covers steps 1–")
    assert [e.step for e in entries[-cfg.keep_last:]] == list(range(ITERATIONS - cfg.keep_last + 1, ITERATIONS + 1))


def test_hard_cap_trims_visibly_and_keeps_tail() -> None:
    cfg = CompressionConfig(hard_cap_entries=12, hard_cap_chars=5000, keep_last=5, threshold=30)
    entries = truncate_entries([_entry(i) for i in range(1, 30)], cfg)
    capped = enforce_hard_cap(entries, cfg, _build)
    assert len(capped) <= 12
    assert capped[0].action == "trimmed" and "trimmed by the hard cap" in capped[0].reasoning
    assert "- step 24: trimmed: [" in render_log(capped)  # visible in what prompts quote
    assert [e.step for e in capped[-5:]] == [25, 26, 27, 28, 29]
    assert sum(e.cost_micros for e in capped) == sum(e.cost_micros for e in entries)


def test_merge_refuses_stale_request_and_empty_summary() -> None:
    cfg = CompressionConfig()
    entries = [_entry(i) for i in range(1, 35)]
    req = build_summary_request(entries, cfg)
    with pytest.raises(ValueError, match="empty summary"):
        merge_summary(entries, req, "  ", _build, cfg)
    with pytest.raises(ValueError, match="changed under"):
        merge_summary(entries[1:], req, "summary", _build, cfg)
    merged = merge_summary([*entries, _entry(35)], req, "summary", _build, cfg)
    assert [e.step for e in merged[-11:]] == list(range(25, 36))  # entries logged meanwhile kept
