"""Where the test suite's time goes: every module's wall time from pytest's JUnit XML reports (a
test case's time includes its set-up and tear-down, so a module's shared fixtures are counted in
the module that started them), slowest first, then the totals as one closing line.

    python -m deploy.suite_times artifacts/tests/junit-*.xml
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import defaultdict

SHOWN = 25  # modules listed by name


def module_times(paths: list[str]) -> tuple[dict[str, float], dict[str, int]]:
    """(module -> seconds, outcome -> count) over the reports."""
    times: dict[str, float] = defaultdict(float)
    outcomes = {"passed": 0, "failed": 0, "skipped": 0}
    for path in paths:
        for case in ET.parse(path).getroot().iter("testcase"):
            module = case.get("classname", "").split("::")[0]
            if module.rsplit(".", 1)[-1][:1].isupper():  # a test class: its module is one level up
                module = module.rsplit(".", 1)[0]
            times[module] += float(case.get("time", 0))
            kinds = {child.tag for child in case}
            if kinds & {"failure", "error"}:
                outcomes["failed"] += 1
            elif "skipped" in kinds:
                outcomes["skipped"] += 1
            else:
                outcomes["passed"] += 1
    return dict(times), outcomes


def main(argv: list[str] | None = None) -> int:
    paths = sys.argv[1:] if argv is None else argv
    times, outcomes = module_times(paths)
    total = sum(times.values())
    ranked = sorted(times.items(), key=lambda kv: -kv[1])
    print(f"\n{'seconds':>8}  {'share':>5}  module (slowest first; from {', '.join(paths)})")
    for module, seconds in ranked[:SHOWN]:
        print(f"{seconds:8.1f}  {seconds / total if total else 0:5.1%}  {module}")
    rest = sum(seconds for _, seconds in ranked[SHOWN:])
    if ranked[SHOWN:]:
        print(f"{rest:8.1f}  {rest / total if total else 0:5.1%}  the {len(ranked) - SHOWN} other modules")
    for kind in ("integration", "unit"):
        part = sum(s for m, s in times.items() if (".integration." in m) == (kind == "integration"))
        print(f"{part:8.1f}  {part / total if total else 0:5.1%}  {kind} tests")
    print(f"{total:8.1f}  100.0%  all {len(times)} modules")
    print(f"suite: {outcomes['passed']} passed, {outcomes['failed']} failed, {outcomes['skipped']} skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
