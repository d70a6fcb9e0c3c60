"""Interpolated Kneser-Ney n-gram language models."""

from kneser.model import KneserNeyLM
from kneser.vocab import Vocabulary, read_sentences

__all__ = ["KneserNeyLM", "Vocabulary", "read_sentences"]
