"""What a Lambda cold start of the API imports (issue #14: cold import <= 300 ms). Powertools'
OpenAPI models (~75-100 ms) are only for the Swagger UI, registered on its first request."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_given_a_fresh_interpreter_when_the_api_handler_is_imported_then_the_openapi_models_are_not():
    code = "import sys, functions.api; print(sorted(m for m in sys.modules if m.endswith('openapi.models')))"
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)

    assert run.stdout.strip() == "[]"
