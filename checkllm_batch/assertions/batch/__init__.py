"""How a check runs over a batch, what `Ctx` is built on: distinct.py (a Python function
once per distinct value), pool.py (the same on every core), values.py (a value templated per
row, prepared once per distinct value), caseframe.py (the case frame custom code sees)."""
