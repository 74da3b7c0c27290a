"""A hard run budget: reserve the estimated cost before each call, settle from usage."""

from __future__ import annotations

import threading

EXHAUSTED = "budget exhausted"


class Budget:
    def __init__(self, limit: float | None):
        self.limit, self.spent, self.reserved = limit, 0.0, 0.0
        self.exhausted = False
        self.lock = threading.Lock()

    def reserve(self, estimate: float) -> bool:
        """True (and the estimate held) when the call fits; once not, never again this run."""
        with self.lock:
            if self.limit is None:
                return True
            if self.exhausted or self.spent + self.reserved + estimate > self.limit:
                self.exhausted = True
                return False
            self.reserved += estimate
            return True

    def settle(self, estimate: float, actual: float | None) -> None:
        with self.lock:
            if self.limit is not None:
                self.reserved -= estimate
            self.spent += actual if actual is not None else 0.0
