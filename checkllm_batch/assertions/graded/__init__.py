"""Model-graded types: each is one function from a `Graded` context (context.py: its rows
and the judge runner) to a frame of outcomes (case_id, test_index, passed, score, reason;
passed null = error). A type's module holds its default prompt (promptfoo's) and its reply
parser (strict: a reply it cannot read is an error); what they share is in shared.py (the
registration, one call per distinct input), prompts.py (rendering) and replies.py (JSON
objects, scores). Without a judge, these end as `error: no judge configured`.

Adding a model-graded type touches its module here, its test table and its docs section;
nothing in judge/ (the transport) or evaluate/judging/ (how a batch reaches the judge).
"""

from . import (  # noqa: F401  (registration)
    compare,
    conversation,
    faithfulness,
    geval,
    rag,
    reference,
    rubric,
    similar,
)

NO_JUDGE = "no judge configured"
PENDING = "decided after all batches (needs every output of the test)"
