"""The judge side of evaluation: model-graded assertions of a batch through the judge
(hook.py), the judge opened and closed for a run (session.py), CheckLLM `cost` (cost.py),
and the types decided across a test's outputs after every batch (decide.py)."""
