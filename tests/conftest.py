"""Every core test runs with the runtime's ApiError check on: a request answered with an
ApiError must leave the partition's state exactly as it found it (coordinator/result.py)."""

from __future__ import annotations

import pytest

from coordinator.runtime import CoordinatorPartition


@pytest.fixture(autouse=True)
def _api_errors_change_nothing(monkeypatch):
    monkeypatch.setattr(CoordinatorPartition, "verify_api_errors", True)
