"""Building blocks below attention and the models: what every layer above may use (dropout)."""

from suite.nn.dropout import Dropout, dropout

__all__ = ["Dropout", "dropout"]
