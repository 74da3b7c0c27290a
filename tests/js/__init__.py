"""Tests of js/: Nunjucks templates and their filters."""
