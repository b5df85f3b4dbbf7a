"""Assignments and reconciliation must not depend on Python's string hash seed: Spark runs the
step in worker processes with different seeds, and a replayed batch must reproduce its outputs.
(Iterating a set of topic names follows the seed; every result here must be order-independent.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys

SCRIPT = r"""
import json, random
from coordinator.group.consumer.assignors import assign
from tests.consumer.consumer_group_helpers import ConsumerGroupTestClient

rnd = random.Random(3)
topics = {f"t{i}": rnd.randint(1, 30) for i in range(12)}
names = sorted(topics)
het = {f"m{i}": {"subscribedTopicNames": rnd.sample(names, rnd.randint(1, 8))} for i in range(25)}
hom = {f"m{i}": {"subscribedTopicNames": names, "instanceId": f"i{i}" if i % 3 else None} for i in range(25)}
out = {a: [assign(a, het, topics), assign(a, hom, topics)] for a in ("uniform", "range")}
first = out["uniform"][0]
again = {m: {**het[m], "assignment": first.get(m, {})} for m in het}
again["new"] = {"subscribedTopicNames": names[:5]}
out["uniform-rerun"] = assign("uniform", again, topics)

# The real coordinator: 25 members join one by one (the uniform assignor), the others heartbeat.
coordinator = ConsumerGroupTestClient("g", topics)
epochs = {}
for i, m in enumerate(sorted(het)):
    r = coordinator.join(m, het[m]["subscribedTopicNames"], rebalance_timeout=1000, assignor="uniform")
    assert r["errorCode"] == 0, r
    epochs[m] = r["memberEpoch"]
    for other in sorted(epochs)[: i]:
        r = coordinator.heartbeat(other, epochs[other])
        assert r["errorCode"] == 0, r
        epochs[other] = r["memberEpoch"]
out["group"] = coordinator.group().to_json()
out["records"] = coordinator.records()
out["responses"] = coordinator.d.responses
print(json.dumps(out, sort_keys=True))
"""


def test_results_do_not_depend_on_the_hash_seed():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    outputs = set()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": root}
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT], cwd=root, env=env, check=True, capture_output=True, text=True
        )
        outputs.add(done.stdout)
    assert len(outputs) == 1
    assert json.loads(outputs.pop())["group"]["groupEpoch"] == 26
