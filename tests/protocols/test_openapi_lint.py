"""openapi.yaml passes a standard OpenAPI linter (Redocly CLI, recommended rules) with no problem.

Redocly CLI is pinned in tests/protocols/node/package.json, beside the Node protocol clients, and
installed with them (``.ci/run``'s ``npm install``). Without Node the test skips locally and fails
under CI=true, like the other Node tests.
"""

from __future__ import annotations

import json
import subprocess

from app.cli import codegen

from .node_clients import NODE_DIR, prepared_node

# None: the document holds only the components its operations reach (no-unused-components too).
SKIPPED_RULES: tuple[str, ...] = ()


def test_openapi_yaml_has_no_lint_problems():
    node = prepared_node()
    redocly = NODE_DIR / "node_modules" / "@redocly" / "cli" / "bin" / "cli.js"
    assert redocly.exists(), "Redocly CLI is missing: npm install --prefix tests/protocols/node"
    done = subprocess.run(
        [
            node,
            str(redocly),
            "lint",
            str(codegen.OPENAPI),
            "--format=json",
            *(f"--skip-rule={rule}" for rule in SKIPPED_RULES),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    problems = json.loads(done.stdout[done.stdout.index("{") :])["problems"]
    summary = [(p["ruleId"], p["severity"], p["message"]) for p in problems]
    assert (done.returncode, summary) == (0, []), done.stderr[-2000:]
