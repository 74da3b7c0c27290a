"""Model-graded types: each is one function from a `Graded` context (its rows and judge)
to a frame of outcomes (case_id, test_index, passed, score, reason; passed null = error).

Prompts follow promptfoo's (_support/prompts.py); replies are parsed strictly
(_support/replies.py). Without a judge, these end as `error: no judge configured`.
"""

from . import compare, rag, rubric, similar  # noqa: F401  (registration)

NO_JUDGE = "no judge configured"
PENDING = "decided after all batches (needs every output of the test)"
