"""``navigator eval compare A B`` (its signature and help: :mod:`cli.evalcmd`)."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from durable_navigator.cli.common import print_json, stdout
from durable_navigator.cli.errors import CliError, handles_errors
from durable_navigator.navcore.evaluation.compare import compare_markdown, compare_reports
from durable_navigator.navcore.evaluation.models import EvalReport

__all__ = ["run_compare", "load_report"]


def load_report(path: Path) -> EvalReport:
    """An ``eval.json`` (or the folder holding one); a one-line error when it is not one."""
    file = path / "eval.json" if path.is_dir() else path
    if not file.is_file():
        raise CliError(f"{path} is not an eval report; pass an eval.json or the --out folder of `navigator eval`")
    try:
        return EvalReport.model_validate_json(file.read_text(encoding="utf-8", errors="replace"))
    except ValidationError as exc:
        raise CliError(f"{file} is not an eval report ({exc.error_count()} problem(s), first: "
                       f"{exc.errors()[0]['msg']}); pass the eval.json `navigator eval` wrote") from None


@handles_errors
def run_compare(report_a: Path, report_b: Path, json_out: bool) -> None:
    """Print B against A as a Markdown table (or JSON rows)."""
    a, b = load_report(report_a), load_report(report_b)
    if json_out:
        print_json([row.model_dump(mode="json") for row in compare_reports(a, b)])
        return
    stdout.print(compare_markdown(a, b, str(report_a), str(report_b)), markup=False, soft_wrap=True)
