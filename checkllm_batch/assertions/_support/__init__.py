"""What the assertion types share and are not types themselves: distinct-value and
process-pool helpers, per-row values, the case frame custom code sees, JavaScript-compatible
regexes and JSON formats, tool-call name parsing, the judge's prompts and reply parsers."""
