"""Tests of store/: cases read from their source file."""
