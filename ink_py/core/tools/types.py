"""What a tool is — mirrors Ink's ``src/core/tools/types.ts``.

A tool is a plain dict the loop looks up by name::

    {"name": "read", "description": "...", "parameters": {JSON Schema},
     "execute": fn(args, signal) -> {"output": "...", "isError": False},
     "concurrencySafe": True}

``parameters`` is sent to the model (and checked by the loop before ``execute`` runs);
``execute`` gets arguments that already passed that check. A tool reports failure by
returning ``isError: True`` with an explanation the model can act on; if it raises, the
loop turns the exception into an error result (``Error: tool read threw: …``).
``concurrencySafe`` tools (read-only ones) may run side by side (second article §八).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

from ..abort import AbortSignal


class _ToolOutputRequired(TypedDict):
    output: str


class ToolOutput(_ToolOutputRequired, total=False):
    isError: bool


class _ToolRequired(TypedDict):
    name: str
    description: str
    parameters: dict[str, Any]
    execute: Callable[[dict[str, Any], AbortSignal | None], ToolOutput]


class Tool(_ToolRequired, total=False):
    concurrencySafe: bool
