"""Writing sequences: search (greedy, beam) for seq2seq and sampling for language models."""
