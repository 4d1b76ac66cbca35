"""Run one Python driver's cells: ``python tests/clients/run.py DRIVER URLS_JSON [dialect/scenario …]``.

``URLS_JSON`` maps each scenario to the root URL of a ``serve-model`` running it; each cell is
printed as one JSON line (``common.main``). One process per client: importing LangChain or
LiteLLM takes seconds, so it is paid once for all of the client's cells.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path

MODULES = {  # driver → its module here (langchain drives langchain-openai and langchain-anthropic)
    "openai": "openai_sdk",
    "anthropic": "anthropic_sdk",
    "langchain": "langchain_clients",
    "litellm": "litellm_sdk",
    "pydantic-ai": "pydantic_ai_clients",
}

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: tests.clients.*
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # LiteLLM: no download at import
    client, roots = sys.argv[1], json.loads(sys.argv[2])
    driver = importlib.import_module(f"tests.clients.{MODULES[client]}")
    from tests.clients.common import main

    main(driver.PAIRS, driver.run, roots, set(sys.argv[3:]) or None)
