"""When a run measures the agent and when it only measures a broken connection (issue #27).

Pure, no Django: runs in the product (`services.run_report`, the run page, the API,
`manage.py evaluate`) and the standalone runner apply the same rule.

* An **outage** is a test without an answer: the agent could not be reached, timed out, answered
  an HTTP error status, or the LLM call failed (predicted type ``failed``).
* An **unreadable** answer came back but is none of the shapes the reader knows (``invalid``).
* When outages and unreadable answers together exceed ``limit`` (default 10 %) of the run's
  tests (every trial counted), the run is **failed**, ``complete: false``, with the reason: its
  figures would score the connection or the protocol, not the agent's decisions.
* A **circuit breaker** stops a run after :data:`BREAKER_AFTER` consecutive failures, so a dead
  or hung agent costs one timeout, not one per test: in the runner, :class:`Breaker` counts
  failed *requests* (a refused connection, a timeout, an HTTP error status; retries included) and
  stops both new tests and pending retries; in the product, the run fails after that many
  consecutive tests without an answer (counted from the results, across worker processes).
"""
from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

DEFAULT_MAX_ERROR_SHARE = 0.10
BREAKER_AFTER = 5
OUTAGE_TYPE = "failed"      # metrics.FAILED: the predicted type of an unanswered test
UNREADABLE_TYPE = "invalid"  # reader.INVALID


@dataclass
class Health:
    tests: int
    outages: int
    unreadable: int
    limit: float = DEFAULT_MAX_ERROR_SHARE
    stopped: str = ""  # why the run was stopped early (the circuit breaker), if it was

    @property
    def errors(self) -> int:
        return self.outages + self.unreadable

    @property
    def share(self) -> float:
        return self.errors / self.tests if self.tests else 0.0

    @property
    def failed(self) -> bool:
        return bool(self.stopped) or (self.tests > 0 and self.share > self.limit)

    @property
    def complete(self) -> bool:
        """Every test has a readable answer within the limit, and none is missing."""
        return not self.failed and self.outages == 0

    def reason(self) -> str:
        if not self.failed:
            return ""
        head = f"{self.stopped}; " if self.stopped else ""
        return (f"{head}{self.errors} of {self.tests} tests ({100 * self.share:.1f} %) have no readable answer "
                f"({self.outages} got no answer: the agent could not be reached, timed out or returned an error; "
                f"{self.unreadable} unreadable), above the limit of {100 * self.limit:g} %: the scores do not "
                "measure the agent")

    def to_json(self) -> dict[str, Any]:
        return {"tests": self.tests, "outages": self.outages, "unreadable": self.unreadable,
                "share": round(self.share, 6), "limit": self.limit, "failed": self.failed,
                "complete": self.complete, "reason": self.reason()}


def health_of(predicted_types: Iterable[str], *, limit: float = DEFAULT_MAX_ERROR_SHARE, stopped: str = "") -> Health:
    """The health of a run from the predicted type of every test it holds (every trial)."""
    tests = outages = unreadable = 0
    for ptype in predicted_types:
        tests += 1
        outages += ptype == OUTAGE_TYPE
        unreadable += ptype == UNREADABLE_TYPE
    return Health(tests, outages, unreadable, limit, stopped)


def check_limit(value: Any) -> float:
    """A share in 0..1 (a percentage "15%" is read too); raises ValueError with the reason."""
    text = str(value).strip()
    number = float(text.rstrip("%")) / (100.0 if text.endswith("%") else 1.0)
    if not 0.0 <= number <= 1.0:
        raise ValueError(f"the error share limit must lie in 0..1 (or 0%..100%), not {value}")
    return number


def breaker_message(outages: int, last: str, unit: str = "tests") -> str:
    return f"stopped after {outages} consecutive {unit} without an answer (last: {last})"


class Breaker:
    """Trips after `after` consecutive failed requests (0: never); any answered request resets
    the count until it has tripped. Thread-safe; `tripped` is the reason, or ""."""

    def __init__(self, after: int = BREAKER_AFTER) -> None:
        self.after, self.count, self.tripped = after, 0, ""
        self._lock = threading.Lock()

    def failure(self, reason: str) -> None:
        with self._lock:
            self.count += 1
            if self.after and self.count >= self.after and not self.tripped:
                self.tripped = breaker_message(self.count, reason, "requests")

    def success(self) -> None:
        with self._lock:
            if not self.tripped:
                self.count = 0
