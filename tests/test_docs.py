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


def test_every_metric_is_documented():
    from streaming.metrics_exporter import HELP

    operations = (ROOT / "docs" / "operations.md").read_text()
    section = operations.split("## Metrics", 1)[1].split("\n## ", 1)[0]
    missing = [
        name for name in HELP if f"`{name}`" not in section and f"`{name.removesuffix('_total')}_total`" not in section
    ]
    assert not missing, "docs/operations.md, Metrics, does not list: " + ", ".join(missing)


def test_every_series_the_core_counts_has_its_help():
    from streaming.metrics_exporter import HELP

    source = (ROOT / "coordinator" / "metrics.py").read_text()
    names = set(re.findall(r'_(?:add|gauge|observe)\("(\w+)"', source))
    names |= (
        {f"{p}_group_count" for p in ("classic", "consumer")} if '_gauge(f"{protocol}_group_count"' in source else set()
    )
    names.discard("request_queue_time_ms_sum")  # served with requests_total as a summary
    assert len(names) > 20 and not sorted(n for n in names if n not in HELP)


def test_the_testing_doc_names_tests_that_exist():
    """docs/testing.md's tables name, on their right, the tests that prove each capability now; and
    every integration module has its place in it."""
    testing = (ROOT / "docs" / "testing.md").read_text()
    integration = ROOT / "tests" / "integration"
    modules = {p.stem: p.read_text() for p in integration.glob("test_*.py")}
    missing, checked = [], 0
    for line in testing.splitlines():
        cells = line.split(" | ")
        if not line.startswith("| `test_") or len(cells) < 2:
            continue
        now = cells[0] if cells[-1].startswith("same") else cells[-1]  # "same": the test on the left
        for module, test in re.findall(r"`(test_\w+)\.py::(test_\w+)`", now)[: 1 if now is cells[0] else None]:
            checked += 1
            if module not in modules or not re.search(rf"^def {test}\(", modules[module], re.M):
                missing.append(f"{module}::{test}")
    assert not missing, "docs/testing.md names tests that do not exist: " + ", ".join(missing)
    assert checked > 60
    assert not [m for m in modules if f"{m}.py" not in testing], "docs/testing.md does not mention every module"
