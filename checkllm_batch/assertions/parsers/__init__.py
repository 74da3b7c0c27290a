"""What the checks read outputs with: markup.py (XML, HTML; htmlnames.py), sql.py,
openaitools.py and toolnames.py (tool calls), meteor.py (METEOR's word matching),
refusal.py (refusal phrases). No type is registered here."""
