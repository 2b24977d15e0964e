"""#29: the offline model's verdicts claim only what it checked, and its stages follow the goal's evidence.

Each case is a repro seen on click, rebuilt as a small fixture repository and run through the real
model activities (``model.prepare`` → ``model.request`` → the shared parsers).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.models import goal_ref, real_model_activities, run_spec

from durable_navigator.activities.investigation import checked_criterion
from durable_navigator.navcore.run.citations import Citation
from durable_navigator.navcore.run.findings import Finding, FindingsDoc
from durable_navigator.navcore.planning.investigation_plan import PlannedStage
from durable_navigator.navcore.navigator.model_calls import CriteriaSpec, InvestigateSpec, PlanningAnalysis, PlanSpec
from durable_navigator.navcore.planning.planning import PlanningConfig, Stage
from durable_navigator.navtypes.flightplan import FlightPlan, Level, VerbosityRule

PARSER = '''"""Option parsing."""


def parse_option_value(option, raw):
    """Parse the raw value of an option and convert it to the option's type."""
    return option.type.convert(raw)


def split_opt(opt):
    return opt[:1], opt[1:]
'''
COMPLETION = '''"""Shell completion."""


def shell_complete(cli, ctx_args, prog_name, complete_var, instruction):
    # the environment variable is parsed to choose bash or zsh output; each completion item
    # for an option value is decided from the parameter type and returned to the shell
    source_bash_zsh = instruction.partition("_")
    return source_bash_zsh


class ShellComplete:
    def get_completions(self, args, incomplete):
        # items returned for the incomplete option value, decided by the parameter
        return []
'''


def _repo(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


async def _result(acts: Any, spec: Any) -> Any:
    out = await run_spec(acts, "offline", spec)
    assert not isinstance(out, Exception), out
    return out.result


def _base(acts: Any, root: Path, goal: str) -> dict[str, Any]:
    return dict(model="offline", repo_root=str(root), goal_ref=goal_ref(acts, goal), max_output_tokens=2048)


async def test_investigation_criterion_is_not_met_on_half_its_terms(tmp_path: Path) -> None:
    """Was: "…parses option values and emails them over SMTP is cited" came back met ("findings mention …
    emails, smtp") on findings that mention neither. Now: not met, evidence empty, the missing terms named."""
    root = _repo(tmp_path / "click", {"src/click/parser.py": PARSER})
    acts = real_model_activities(tmp_path)
    cite = Citation(path="src/click/parser.py", start=4, end=6)
    doc = FindingsDoc(findings=[Finding(claim="parse_option_value parses the raw value of an option",
                                        citations=[cite], quote="def parse_option_value(option, raw):")])
    findings_ref = acts.store.put_bytes(doc.model_dump_json().encode(), "application/json", "")
    smtp = "the function that parses option values and emails them over SMTP is cited"
    parse = "the code that parses option values is cited"
    vague = "the option parser is thread-safe"
    stage = PlannedStage(title="parse", task="find the option parser", criteria=[smtp, parse, vague])
    goal = "which function parses option values and emails them over SMTP?"
    out = await _result(acts, InvestigateSpec(**_base(acts, root, goal), kind="investigate.criteria", subject="stage",
                                              stage=stage, findings_ref=findings_ref))
    by = {c.criterion: c for c in out.criteria}
    assert by[smtp].status == "not_met" and by[smtp].evidence == [], by[smtp]
    assert "never found: emails, smtp" in by[smtp].note and "option (src/click/parser.py:4-6)" in by[smtp].note
    # every term found in one cited finding: met, the citation as evidence, each term's place in the note
    assert by[parse].status == "met" and by[parse].evidence == ["src/click/parser.py:4-6"]
    assert "parses (src/click/parser.py:4-6)" in by[parse].note
    # a claim words in findings cannot show: unchecked, and it stays unchecked through the evidence check
    assert by[vague].status == "unchecked" and by[vague].evidence == []
    checked, _ = checked_criterion(by[vague], lambda path: 10)
    assert checked.status == "unchecked"


async def test_a_path_at_a_level_is_met_when_the_final_map_shows_it_so(tmp_path: Path) -> None:
    """Was: "`src/click/shell_completion.py` is shown at level 2 or more" NOT MET while the map showed it at
    L2, because the verdict came from "goal terms 12/22" (the goal's words in the file's hidden bodies)."""
    root = _repo(tmp_path / "click", {"src/click/shell_completion.py": COMPLETION, "src/click/parser.py": PARSER})
    acts = real_model_activities(tmp_path)
    goal = ("how does shell completion decide which completion items to return for an option value, and how is "
            "the environment variable parsed to choose bash or zsh output?")
    criterion = "`src/click/shell_completion.py` is shown at level 2 or more"
    stage = Stage(objective="Inspect the src/click/ area for the goal", success_criteria=[criterion])
    outline = FlightPlan(token_budget=4000, rules=[VerbosityRule(glob="**", level=Level.OUTLINE)])
    check = (await _result(acts, CriteriaSpec(**_base(acts, root, goal), config=PlanningConfig(), stage_index=0, stage=stage,
                                              flight_plan=outline))).check
    (r,) = check.results
    assert r.status == "met" and r.evidence == ["src/click/shell_completion.py at L2"], r
    paths = FlightPlan(token_budget=4000, rules=[VerbosityRule(glob="**", level=Level.PATH)])
    low = (await _result(acts, CriteriaSpec(**_base(acts, root, goal), config=PlanningConfig(), stage_index=0, stage=stage,
                                            flight_plan=paths))).check
    assert low.results[0].status == "not_met" and "at L1" in low.results[0].note


async def test_a_word_in_a_pipfile_is_no_evidence_for_a_literal(tmp_path: Path) -> None:
    """Was: "verify (Pipfile)" counted for a criterion about `verify=False`."""
    root = _repo(tmp_path / "req", {
        "Pipfile": '[packages]\nverify = "*"\nrequests = "*"\n',
        "src/net.py": "import requests\n\n\ndef fetch(url):\n    return requests.get(url, verify=False)\n"})
    acts = real_model_activities(tmp_path)
    goal = "where is verify=False passed to requests?"
    stage = Stage(objective="find it", success_criteria=["`verify=False` is shown at level 2 or more"])
    pipfile_only = FlightPlan(token_budget=4000, rules=[VerbosityRule(glob="Pipfile", level=Level.FULL),
                                                        VerbosityRule(glob="src/**", level=Level.PATH)])
    check = (await _result(acts, CriteriaSpec(**_base(acts, root, goal), config=PlanningConfig(), stage_index=0, stage=stage,
                                              flight_plan=pipfile_only))).check
    assert check.results[0].status == "not_met" and check.results[0].evidence == [], check
    full = FlightPlan(token_budget=4000, rules=[VerbosityRule(glob="**", level=Level.FULL)])
    check = (await _result(acts, CriteriaSpec(**_base(acts, root, goal), config=PlanningConfig(), stage_index=0, stage=stage,
                                              flight_plan=full))).check
    assert check.results[0].status == "met" and check.results[0].evidence == ["verify=False in src/net.py at L4"]


async def test_stages_name_areas_the_goals_evidence_points_at(tmp_path: Path) -> None:
    """Was: "Inspect the .devcontainer/ area" for a question about option parsing."""
    root = _repo(tmp_path / "click", {
        "src/click/parser.py": PARSER,
        "src/click/core.py": "from .parser import parse_option_value\n\n\nclass Option:\n"
                             "    def process_value(self, ctx, value):\n        return parse_option_value(self, value)\n",
        "src/click/termui.py": "def echo(message):\n    print(message)\n",
        "src/click/utils.py": "from .termui import echo\n\n\ndef safecall(func):\n    return func\n",
        ".devcontainer/devcontainer.json": '{"name": "click", "postCreateCommand": "pip install -e ."}\n',
        ".devcontainer/setup.py": "from click.termui import echo\nfrom click.utils import safecall\n\n"
                                  "def main():\n    echo('ready')\n",
        "tools/release.py": "from click.utils import safecall\n\n\ndef bump():\n    safecall(print)\n",
    })
    acts = real_model_activities(tmp_path)
    goal = ("how are option values parsed and converted to the option type, and where does process_value hand "
            "the raw value to the parser before the command callback runs with the converted values?")
    cfg = PlanningConfig(max_stages=6)
    plan = (await _result(acts, PlanSpec(**_base(acts, root, goal), config=cfg,
                                         analysis=PlanningAnalysis(direct=False)))).plan
    areas = [s.objective for s in plan.stages]
    assert areas and not any(".devcontainer" in a or "tools/" in a for a in areas), areas
    assert any("src/click/" in a for a in areas)
    # the goal names the folder: then it may be planned
    named = goal + " Is the .devcontainer setup involved?"
    plan = (await _result(acts, PlanSpec(**_base(acts, root, named), config=cfg,
                                         analysis=PlanningAnalysis(direct=False)))).plan
    assert any("src/click/" in s.objective for s in plan.stages)
