"""What the assertion types share and are not types themselves (every name here is public to
the type modules; nothing in this package registers a type):

- running checks: distinct.py (once per distinct value), pool.py (on every core), values.py
  (per-row values), caseframe.py (the case frame custom code sees);
- JavaScript's rules as promptfoo applies them: jsregex.py, jsontext.py, jsonformats.py,
  jsonvalue.py, whitespace.py;
- parser-backed checks: markup.py (XML, HTML; htmlnames.py), sql.py, openaitools.py,
  toolnames.py; METEOR's internals: meteor.py; refusal phrases: refusal.py;
- custom logic: scripts.py (python), expression.py, webhook.py.
What the model-graded types share is in graded/ with them.
"""
