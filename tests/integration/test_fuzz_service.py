"""The fuzz drill at CI size (fixed seeds): hostile records of every kind mixed with well-formed
requests, through the real broker and job. `bench/fuzz_service.py` runs it larger."""

from __future__ import annotations

import pytest

from .fuzz_drill import run_fuzz

# On the shared job (its coordinator.request.max.bytes is 20,000: the corpus's oversized records).
pytestmark = [pytest.mark.integration, pytest.mark.shared_job("plain")]


@pytest.mark.parametrize("seed", [8, 2026])
def test_hostile_mix_never_stops_the_query_and_good_requests_are_answered(job, seed):
    figures = run_fuzz(job, seed=seed, hostile=250, good=80)
    assert figures["wellFormed"] == 80
