"""The data layer: the data directory, splits, file readers and tokenizers."""
