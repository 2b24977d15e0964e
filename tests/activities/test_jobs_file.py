"""Jobs-file validation: every problem reported per job, with field, line and what to do."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from durable_navigator.activities.batch import JobsFileError, load_jobs_file, parse_jobs_text
from durable_navigator.navcore.batch.batch import BatchJob, BudgetPool, resolve_jobs

GOOD = """\
defaults:
  model: offline
  token_budget: 3000
  max_budget_usd: 0.10
jobs:
  - repo: repos/a
    goal: why are tokens double-counted?
  - repo: repos/b
    goal: add OAuth to the CLI
    model: gemini-2.5-flash
    max_iterations: 4
"""

BAD = """\
defaults:
  model: offline
jobs:
  - repo: repos/a
    goal: fine
  - repo: repos/b
  - goal: no repo here
    repo: ""
  - repo: repos/c
    goal: x
    mode: interactive
    token_budget: -5
    colour: blue
"""


def test_good_file_resolves_defaults_and_relative_paths(tmp_path: Path) -> None:
    path = tmp_path / "jobs.yaml"
    path.write_text(GOOD)
    spec = load_jobs_file(path)
    jobs = resolve_jobs(spec)
    assert [j.repo_path for j in jobs] == [str(tmp_path / "repos/a"), str(tmp_path / "repos/b")]
    assert [j.model for j in jobs] == ["offline", "gemini-2.5-flash"]
    assert [j.max_iterations for j in jobs] == [12, 4]
    assert {j.token_budget for j in jobs} == {3000}
    assert jobs[0].max_budget_usd == Decimal("0.10")


def test_every_problem_is_reported_per_job_with_line_and_fix() -> None:
    with pytest.raises(JobsFileError) as info:
        parse_jobs_text(BAD, "jobs.yaml")
    problems = info.value.problems
    text = "\n".join(problems)
    assert "job 1 (line 6) field 'goal': Field required; add it" in text
    assert "job 2 (line 8) field 'repo'" in text
    assert "job 3 (line 11) field 'mode'" in text and "use mode: autonomous" in text
    assert "job 3 (line 12) field 'token_budget'" in text
    assert "job 3 (line 13) field 'colour'" in text and "remove it" in text
    assert len(problems) == 5
    assert all(p.startswith("jobs.yaml: ") for p in problems)
    assert "\n" not in str(info.value)  # the exception itself is one line


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("jobs: [", "line 1"),
        ("just a string", "expected a mapping with 'jobs'"),
        ("jobs: []", "'jobs'"),
        ("defaults: {model: offline}\n", "'jobs'"),
    ],
)
def test_malformed_files_get_one_clear_error(text: str, needle: str) -> None:
    with pytest.raises(JobsFileError) as info:
        parse_jobs_text(text, "jobs.yaml")
    assert needle in str(info.value)


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(JobsFileError, match="no such file"):
        load_jobs_file(tmp_path / "nope.yaml")


def test_pool_slices_never_exceed_what_is_available() -> None:
    pool = BudgetPool(total_micros=1_000)
    job = BatchJob(index=0, name="a", repo_path="r", goal="g", model="offline", token_budget=10,
                   max_iterations=1, max_output_tokens=64)
    capped = job.model_copy(update={"max_budget_usd": Decimal("0.0001")})
    assert pool.slice_for(job, 4) == 250
    assert pool.slice_for(capped, 1) == 100
    pool.take(0, 600)
    assert pool.slice_for(job, 1) == 400
    with pytest.raises(ValueError):
        pool.take(1, 401)
    assert pool.settle(0, 150) == 450
    assert pool.spent_micros == 150 and pool.available_micros == 850
