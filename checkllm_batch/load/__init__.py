"""Loading: outputs datasets as Arrow batches, and cases built from them."""
