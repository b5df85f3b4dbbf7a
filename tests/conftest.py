"""Every core test runs with the runtime's checks on: a request answered with an ApiError must
leave the partition's state exactly as it found it, and no handler, timer handler, replayer or load
hook may apply an effect itself rather than return it in its result (coordinator/result.py)."""

from __future__ import annotations

import pytest

from coordinator import CoordinatorPartition


@pytest.fixture(autouse=True)
def _api_errors_change_nothing(monkeypatch):
    monkeypatch.setattr(CoordinatorPartition, "verify_api_errors", True)
    monkeypatch.setattr(CoordinatorPartition, "verify_effects", True)
