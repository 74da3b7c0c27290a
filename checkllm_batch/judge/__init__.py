"""The judge: model-graded assertions become requests, planned, de-duplicated, rate-limited,
retried, budgeted and recorded in DuckDB `judge_calls` (which is also the cache)."""

from ..suites.judge import JudgeConfig
from .protocol import Judge, Reply, Request, ScriptedJudge

__all__ = ["Judge", "JudgeConfig", "Reply", "Request", "ScriptedJudge"]
