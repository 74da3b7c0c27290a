"""Tests of the analysis layer: views, macros, compare, export, report, notebooks."""
