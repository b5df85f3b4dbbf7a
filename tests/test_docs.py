"""The docs name what the code serves: every registered API is documented with its versions."""
import re
from pathlib import Path

import coordinator  # noqa: F401  (registers every API)
from coordinator.api import all_apis

ROOT = Path(__file__).resolve().parent.parent
PROTOCOL = (ROOT / "docs" / "protocol.md").read_text()


def test_every_api_is_documented_with_its_key_and_versions():
    missing = []
    for spec in all_apis():
        versions = {f"{spec.min_version}–{spec.max_version}", f"{spec.min_version}-{spec.max_version}"}
        if spec.min_version == spec.max_version:
            versions |= {str(spec.min_version), f"version {spec.min_version}"}
        lines = [line for line in PROTOCOL.splitlines() if re.search(rf"\b{spec.name}\b", line)]
        if not any(str(spec.api_key) in line and any(v in line for v in versions) for line in lines):
            missing.append(f"{spec.name} (key {spec.api_key}, versions {spec.min_version}-{spec.max_version})")
    assert not missing, "docs/protocol.md does not list: " + ", ".join(missing)


def test_readme_commands_exist():
    readme = (ROOT / "README.md").read_text()
    for script in ("deploy/run-local.sh", "deploy/test.sh"):
        assert script in readme and (ROOT / script).exists()
    assert "deploy/test.sh" in (ROOT / ".ci" / "run").read_text()
