"""The judge's side of the model-graded types (what graded/ types share): grading.py,
prompts.py (the prompts promptfoo sends), replies.py (reading a judge's reply).

The rest of what the types share lives by what it is: batch/ (running a check over a batch),
parsers/ (the libraries and rules outputs are read with), custom/ (user code, SQL, webhooks),
and JavaScript's rules in js/.
"""
