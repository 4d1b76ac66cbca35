"""A small JSON Schema check for tool arguments — stands in for the typebox ``Value.Check``
Ink's loop calls (article §4.3: "即使 JSON 解析成功,参数也可能不符合工具要求").

It covers what tool parameter schemas use: ``type`` (one or a list), ``properties``,
``required``, ``additionalProperties: false``, ``items``, ``enum``, ``minimum``,
``maximum``, ``minLength``. It returns readable problems instead of raising, so the loop
can hand them back to the model::

    >>> schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    >>> check_arguments(schema, {"path": 123})
    ['/path: must be a string, got 123']
    >>> check_arguments(schema, {})
    ["(root): missing required property 'path'"]
    >>> check_arguments(schema, {"path": "README.md"})
    []
"""

from __future__ import annotations

import json
from typing import Any

# JSON Schema type name → a test of a decoded JSON value (bool is not a number in JSON).
TYPE_CHECKS = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    # (float(v) of a 400-digit int would raise OverflowError: ints are whole without asking)
    "integer": lambda v: not isinstance(v, bool) and (isinstance(v, int) or (isinstance(v, float) and v.is_integer())),
}


def check_arguments(schema: dict[str, Any], value: Any, where: str = "") -> list[str]:
    """Every way ``value`` breaks ``schema``, as ``"<json pointer>: <problem>"`` lines."""
    here = where or "(root)"
    types = schema.get("type")
    if types is not None:
        allowed = [types] if isinstance(types, str) else list(types)
        if not any(TYPE_CHECKS.get(t, lambda v: True)(value) for t in allowed):
            article = "an" if allowed[0][0] in "aeiou" else "a"
            return [f"{here}: must be {article} {' or '.join(allowed)}, got {_short(value)}"]
    problems: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{here}: must be one of {_short(schema['enum'])}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append(f"{here}: must be at least {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            problems.append(f"{here}: must be at most {schema['maximum']}")
    if isinstance(value, str) and len(value) < schema.get("minLength", 0):
        problems.append(f"{here}: must have at least {schema['minLength']} characters")
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                problems.append(f"{here}: missing required property '{name}'")
        for name, item in value.items():
            if name in properties:
                problems += check_arguments(properties[name], item, f"{where}/{name}")
            elif schema.get("additionalProperties") is False:
                problems.append(f"{here}: unexpected property '{name}'")
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            problems += check_arguments(schema["items"], item, f"{where}/{index}")
    return problems


def _short(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (ValueError, RecursionError):  # an int of more than 4300 digits, or nested too deep
        text = f"({type(value).__name__})"
    return text if len(text) <= 60 else text[:57] + "..."
