"""Checks on the repository itself: lint and layers, docs, README, no row loops, type dispatch, where graded types live."""
