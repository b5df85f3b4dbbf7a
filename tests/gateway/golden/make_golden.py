"""Writes the golden bytes of the gateway codec's tests (`kafka-4.4.0.json` here) with Kafka's own
classes: sample bodies (`samples.py`) of every message the gateway reads or writes, in every
version Kafka 4.4.0 has, are written by Kafka's generated code (GoldenBytes.java, run with the
kafka-clients 4.4.0 jar that deploy/setup.sh resolves). Run once after a change of the samples or
of the vendored files:

    .venv/bin/python -m tests.gateway.golden.make_golden
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from deploy.kafka_local import KAFKA_JARS
from tests.gateway.golden.samples import cases

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "kafka-4.4.0.json"


def main() -> int:
    jars = [KAFKA_JARS / "kafka-clients-4.4.0.jar", *sorted(KAFKA_JARS.glob("jackson-*.jar"))]
    missing = [j for j in jars[:1] if not j.is_file()]
    if missing:
        print(f"missing {missing}: run deploy/setup.sh", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        given, produced = Path(tmp) / "cases.json", Path(tmp) / "golden.json"
        given.write_text(json.dumps(cases()))
        classpath = ":".join(str(j) for j in jars)
        subprocess.run(
            ["java", "-cp", classpath, str(HERE / "GoldenBytes.java"), str(given), str(produced)], check=True
        )
        out = json.loads(produced.read_text())
    for case in out:  # Kafka's JSON of the bytes: kept only where it is not the sample itself
        if case["kafkaJson"] == case["json"]:
            del case["kafkaJson"]
    GOLDEN.write_text(
        "[\n" + ",\n".join(json.dumps(c, ensure_ascii=False, separators=(",", ":")) for c in out) + "\n]\n"
    )
    print(f"{len(out)} cases written to {GOLDEN}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
