"""The command line, `checkllm-batch`: the only package that prints, exits or imports click.
The library below it raises and returns frames and documents; these commands print them."""

from .main import main

__all__ = ["main"]
