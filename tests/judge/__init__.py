"""Tests of judge/: the OpenAI-compatible client over real HTTP."""
