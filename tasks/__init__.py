"""One module per domain: data loading, tokenization, embedding/head choice, loss and metrics."""
