"""polartok: tokenisation for sentiment analysis."""

from polartok.tokenizer import NEGATORS, Tokenizer, mark_negation

__version__ = "0.3.1"
__all__ = ["NEGATORS", "Tokenizer", "mark_negation"]
