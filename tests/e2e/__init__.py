"""End-to-end tests across the package: crash and resume, Ctrl-C, fuzzing, damaged inputs, security, promptfoo's verdicts (the kit)."""
