"""rougekit: ROUGE-N and ROUGE-L without dependencies."""

from rougekit.scorer import RougeScorer, Score

__version__ = "1.0.2"
__all__ = ["RougeScorer", "Score"]
