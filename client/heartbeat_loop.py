"""The heartbeat loop the KIP-848 group members share: ConsumerGroupMember, StreamsGroupMember and
ShareConsumer each say what they send and what they do with an answer; this says when and how
(as Kafka's AbstractHeartbeatRequestManager and AbstractMembershipManager do for the Java clients):

- one heartbeat: the body is built under the member's lock, sent with `response_timeout_s`; no
  answer in time (the coordinator job may be restarting) and the next heartbeat says everything
  again;
- an answer without error sets the member epoch and the heartbeat interval, then the member
  reconciles what the coordinator assigned;
- FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: the member loses what it owned and rejoins with epoch 0,
  at once; the retriable coordinator errors are retried after `retry_backoff_s`; any other error
  stops the member (`fatal` says which);
- the thread heartbeats every heartbeatIntervalMs, at once after a lost response or a fencing, and
  at once when the member took or gave up something (its acknowledgement), or when woken;
- leaving: one heartbeat with the leave epoch, answered or not.
"""

from __future__ import annotations

import base64
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import ClassVar, Self

from .request_client import CoordinatorClient, ResponseTimeout

NONE = 0
FENCED = frozenset({25, 110})  # UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH
# COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
COORDINATOR_RETRIABLE = frozenset({14, 15, 16})
LEAVE = -1


def new_member_id() -> str:
    """Uuid.randomUuid().toString(): 22 characters of url-safe base64, never starting with '-'."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        if not text.startswith("-"):
            return text


class HeartbeatMember(ABC):
    """A group member heartbeating on a thread of its own; subclasses build the requests and
    handle the answers (always under `_lock`)."""

    API: ClassVar[str]
    API_VERSION: ClassVar[int]
    RETRIABLE: ClassVar[frozenset[int]] = COORDINATOR_RETRIABLE
    THREAD_NAME: ClassVar[str]  # the thread is named f"{THREAD_NAME}-{member_id}"

    def __init__(
        self,
        client: CoordinatorClient,
        group_id: str,
        *,
        member_id: str | None,
        response_timeout_s: float,
        retry_backoff_s: float,
        on_response: Callable[[dict, float], None] | None = None,
    ):
        self.client = client
        self.group_id = group_id
        self.member_id = member_id or new_member_id()
        self.response_timeout_s = response_timeout_s
        self.retry_backoff_s = retry_backoff_s
        self.on_response = on_response  # (response, seconds it took), for each answered heartbeat

        self.member_epoch = 0
        self.heartbeat_interval_ms = 5000
        self.error: dict | None = None  # the last error response
        self.fatal: dict | None = None  # the error that stopped the member
        self.fenced = 0  # times fenced
        self.heartbeats = 0  # heartbeats answered
        self.first_answer_at: float | None = None  # time.monotonic() of the first answered heartbeat
        self._ack_needed = False  # the member's assignment changed: heartbeat at once
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------- what each member says and does
    @abstractmethod
    def _request(self) -> dict:
        """The next heartbeat's body."""

    @abstractmethod
    def _resend_in_full(self) -> None:
        """The coordinator may not have heard the last heartbeat: make the next one say everything."""

    @abstractmethod
    def _fenced(self) -> None:
        """Fenced (the epoch is already 0): drop what the member owned."""

    @abstractmethod
    def _on_answer(self, body: dict, resp: dict) -> None:
        """An error-free answer to `body` (epoch and interval already taken): reconcile."""

    def _after_answer(self, resp: dict) -> None:  # noqa: B027 - an optional hook, empty by default
        """An error-free answer, outside the lock (for work that must not hold up the heartbeats)."""

    # ---------------------------------------------------------------- one heartbeat
    def heartbeat_once(self) -> dict | None:
        """Send one heartbeat and handle its response; None if none came in time."""
        with self._lock:
            body = self._request()
        started = time.monotonic()
        try:
            resp = self.client.request(
                self.API, self.API_VERSION, body, key=self.group_id, timeout=self.response_timeout_s
            )
        except ResponseTimeout:
            with self._lock:
                self._resend_in_full()
            return None
        self.heartbeats += 1
        if self.first_answer_at is None:
            self.first_answer_at = time.monotonic()
        if self.on_response is not None:
            self.on_response(resp, time.monotonic() - started)
        with self._lock:
            answered = self._handle(body, resp)
        if answered:
            self._after_answer(resp)
        return resp

    def _handle(self, body: dict, resp: dict) -> bool:
        """Take the response to `body`; False if it was an error."""
        code = resp["errorCode"]
        if code != NONE:
            self.error = resp
            self._resend_in_full()
            if code in FENCED:
                self.member_epoch = 0
                self.fenced += 1
                self._fenced()
            elif code not in self.RETRIABLE:
                self.fatal = resp
                self._stop.set()
            return False
        self.member_epoch = resp["memberEpoch"]
        self.heartbeat_interval_ms = resp["heartbeatIntervalMs"]
        self._on_answer(body, resp)
        return True

    # ---------------------------------------------------------------- the heartbeat thread
    def start(self) -> Self:
        self._thread = threading.Thread(target=self._run, name=f"{self.THREAD_NAME}-{self.member_id}", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            resp = self.heartbeat_once()
            if self._stop.is_set():
                break
            with self._lock:
                ack, self._ack_needed = self._ack_needed, False
            if resp is None:
                continue  # resend at once (in full)
            code = resp["errorCode"]
            if code != NONE:
                wait = 0 if code in FENCED else self.retry_backoff_s
            else:
                wait = 0 if ack else self.heartbeat_interval_ms / 1000
            self._wake.wait(wait)
            self._wake.clear()

    def wake(self) -> None:
        """Heartbeat now (e.g. after a subscription change)."""
        self._wake.set()

    def kill(self) -> None:
        """Stop heartbeating without a word, as a crashed process would."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=self.response_timeout_s + 5)

    def _send_leave(self, body: dict) -> dict | None:
        """The leave heartbeat's response; None if none came in time."""
        try:
            return self.client.request(
                self.API, self.API_VERSION, body, key=self.group_id, timeout=self.response_timeout_s * 4
            )
        except ResponseTimeout:
            return None
