"""The judge's transport: requests sent to an OpenAI-compatible endpoint, de-duplicated,
rate-limited, retried, budgeted and recorded in DuckDB `judge_calls` (which is also the
cache). Its settings are `suites.judge.JudgeConfig`; what a model-graded type asks is
assertions/graded/, how a batch's graded assertions reach it is evaluate/judging/."""

from .protocol import Judge, JudgeRunner, Reply, Request, ScriptedJudge

__all__ = ["Judge", "JudgeRunner", "Reply", "Request", "ScriptedJudge"]
