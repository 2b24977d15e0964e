"""The pure parts of steering an investigation: a human's stage plan checked field by field, the plan file,
and the compression answer (parsed the same way for every model; offline answered deterministically)."""

from __future__ import annotations

from pathlib import Path

import pytest

from durable_navigator.activities.models.offline.investigate import investigate_answer
from durable_navigator.cli.errors import CliError
from durable_navigator.cli.planfile import dump_stage_plan, load_stage_plan, parse_stage_plan
from durable_navigator.navcore.run.findings import Citation, Finding
from durable_navigator.navcore.investigation.prompts import STAGE_RECORD_CHARS, parse_investigate, record_text
from durable_navigator.navcore.planning.investigation_plan import PlannedStage, stage_plan_problem
from durable_navigator.navcore.model.model import InvestigateTask

GOOD = PlannedStage(title="the plugin", task="read it", criteria=["after_call is cited"], max_loops=1)


@pytest.mark.parametrize(("stages", "start"), [
    ([], "stages: the plan needs at least one stage"),
    ([GOOD] * 3, "stages: 3 stages, more than the run's max_stages of 2"),
    ([GOOD, GOOD.model_copy(update={"profile": "nobody"})], "stages.1.profile: no profile 'nobody'"),
    ([GOOD.model_copy(update={"title": "  "})], "stages.0.title: is blank"),
    ([GOOD.model_copy(update={"criteria": ["ok", " "]})], "stages.0.criteria.1: is blank"),
    # a payload built without validation is validated again
    ([PlannedStage.model_construct(title="t", task="x", criteria=[], profile=None, branches=1, max_loops=None)],
     "stages.0.criteria: List should have at least 1 item"),
    ([{"title": "t", "task": "x", "criteria": ["c"], "max_loops": 9}], "stages.0.max_loops: Input should be less"),
])
def test_a_bad_plan_is_one_line_naming_the_field(stages: list, start: str) -> None:
    problem = stage_plan_problem(stages, max_stages=2, profiles=["stage-worker"])
    assert problem is not None and problem.startswith(start) and "\n" not in problem


def test_a_good_plan_passes() -> None:
    assert stage_plan_problem([GOOD, GOOD.model_copy(update={"profile": "stage-worker"})], max_stages=2,
                              profiles=["stage-worker"]) is None


def test_the_plan_file_round_trips_and_names_the_bad_field(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(dump_stage_plan([GOOD, PlannedStage(title="b", task="y", criteria=["c"], branches=2)]))
    assert load_stage_plan(path) == [GOOD, PlannedStage(title="b", task="y", criteria=["c"], branches=2)]
    assert parse_stage_plan("- {title: a, task: b, criteria: [c]}", "f") == [
        PlannedStage(title="a", task="b", criteria=["c"])]  # a bare list is a plan too
    for text, message in (("stages: [{title: a, task: b}]", "f: stages.0.criteria: Field required"),
                          ("stages: [{title: a, task: b, criteria: [c], colour: red}]", "f: stages.0.colour: Extra"),
                          ("stages: []", "f: stages: expected a non-empty list"),
                          ("stages: [x\n", "f:2: not valid YAML"),
                          ("stages: [{title: a, task: b, criteria: [c]}]\nnotes: x", "f: notes: unknown key")):
        with pytest.raises(CliError) as err:
            parse_stage_plan(text, "f")
        assert str(err.value).startswith(message), str(err.value)
    with pytest.raises(CliError, match="no such file"):
        load_stage_plan(tmp_path / "missing.yaml")


def _task(**kw: object) -> InvestigateTask:
    base: dict = dict(goal="g", repo_root="/r", kind="investigate.compress", subject="stage", stage=GOOD,
                      stage_index=0, loop=2, summary="the plugin records usage")
    return InvestigateTask(**{**base, **kw})


def test_the_compression_answer_is_parsed_trimmed_for_history_and_whole_for_the_store() -> None:
    long = "x" * (STAGE_RECORD_CHARS * 2)
    out = parse_investigate(_task(), '{"record": "%s"}' % long)
    assert not isinstance(out, str) and len(out.record) == STAGE_RECORD_CHARS and out.record.endswith("…")
    assert record_text('{"record": "%s"}' % long) == long
    assert parse_investigate(_task(), '{"record": ""}') == (
        'the record was empty; answer {"record": "..."} with the stage\'s findings and citations')


def test_the_offline_record_names_the_stage_its_answer_and_its_cited_findings() -> None:
    finding = Finding(claim="after_call records usage", citations=[Citation(path="src/p.py", start=26, end=29)])
    text = investigate_answer(_task(all_findings=[finding]))
    out = parse_investigate(_task(), text)
    assert not isinstance(out, str)
    assert out.record.startswith("[0] the plugin: 1 findings in 2 loop(s); the plugin records usage")
    assert "- after_call records usage (src/p.py:26-29)" in out.record
