"""Model building blocks: embeddings, the Transformer core, recurrent baselines, heads."""
