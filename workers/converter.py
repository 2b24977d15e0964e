"""The one data converter: worker, clients and the Replayer all use it.

Pydantic-aware JSON (``temporalio.contrib.pydantic``) so workflow inputs,
results, signals, queries and activity payloads are the typed models of
``navcore`` on both sides.
"""

from __future__ import annotations

from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter

__all__ = ["DATA_CONVERTER", "data_converter"]

DATA_CONVERTER: DataConverter = pydantic_data_converter


def data_converter() -> DataConverter:
    """The project's data converter (pass it to ``Client.connect``, ``Replayer``, test envs)."""
    return DATA_CONVERTER
