"""Model-graded assertions on a cluster: workers never call the judge. A worker's runner
answers from the replies the driver sent it and records every other request; a fragment
with requests left unanswered writes nothing and returns them. The driver de-duplicates
them across the dataset and sends them through the run's one Runner (the judge_calls
cache, one limiter, the budget, retries, the ledger), then runs those fragments again
with the replies: a multi-step type (g-eval, the RAG types) takes one round per step."""

from __future__ import annotations

from ..errors import CheckLLMError
from ..judge.protocol import JudgeRunner, Reply, Request, Stats

PENDING = "judge reply pending (Ray engine)"
MAX_ROUNDS = 20


class RecordingRunner(JudgeRunner):
    """A worker's JudgeRunner: answers from the driver's replies, no network."""

    def __init__(self, known: dict[str, Reply]):
        self.known, self.stats = known, Stats()
        self.missing: dict[str, Request] = {}

    def run(self, requests: list[Request]) -> dict[str, Reply]:
        for r in requests:
            if r.hash not in self.known:
                self.missing[r.hash] = r
        return {r.hash: self.known.get(r.hash, Reply(error=PENDING)) for r in requests}

    def unparsed(self, reply: Reply) -> None:
        """A reply the grader could not read: counted (its row is an error with the reason);
        the driver's ledger, which workers cannot write, keeps the call as answered."""
        self.stats.unparsed += 1


def rounds(run_round, runner, todo: list) -> None:
    """run_round(todo, known) -> (fragment, missing requests) per fragment; repeat with the
    runner's replies until every fragment is written."""
    known: dict[str, Reply] = {}
    for _ in range(MAX_ROUNDS):
        outcomes = run_round(todo, known)
        missing = {r.hash: r for _, requests in outcomes for r in requests}
        if not missing:
            return
        if runner is None or missing.keys() <= known.keys():
            raise CheckLLMError("judge requests left unanswered on Ray: "
                                f"{len(missing)} requests")
        known.update(runner.run(list(missing.values())))
        todo = [f for f, requests in outcomes if requests]
    raise CheckLLMError(f"judge requests still pending after {MAX_ROUNDS} rounds")
