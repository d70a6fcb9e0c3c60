import re

NEGATORS = frozenset(["not", "no", "never", "nothing", "nobody", "nowhere", "neither", "nor", "cannot"])
CLAUSE_END = frozenset([".", ",", "!", "?", ";", ":", "but"])

_TOKEN = re.compile(
    r"""
    [:;=][-']?[()dpDP]          # emoticons such as :) ;-( =D
    | \w+(?:'\w+)?              # words, with one inner apostrophe (don't, film's)
    | [.,!?;:]                  # clause punctuation
    """,
    re.VERBOSE,
)
_ELONGATED = re.compile(r"(\w)\1{2,}")


def _is_negator(token):
    return token in NEGATORS or token.endswith("n't")


def mark_negation(tokens, prefix="NOT_"):
    """Prefix every token between a negator and the end of its clause."""
    marked = []
    in_scope = False
    for token in tokens:
        if token in CLAUSE_END:
            in_scope = False
            marked.append(token)
        elif in_scope:
            marked.append(prefix + token)
        else:
            marked.append(token)
            in_scope = _is_negator(token)
    return marked


class Tokenizer:
    """Split a sentence into tokens.

    lowercase: lowercase the text first.
    reduce_elongation: "soooo" -> "soo", so elongated spellings share counts.
    negation: mark negation scope with a NOT_ prefix (see mark_negation).
    """

    def __init__(self, lowercase=True, reduce_elongation=True, negation=False):
        self.lowercase = lowercase
        self.reduce_elongation = reduce_elongation
        self.negation = negation

    def __call__(self, text):
        if self.lowercase:
            text = text.lower()
        if self.reduce_elongation:
            text = _ELONGATED.sub(r"\1\1", text)
        tokens = _TOKEN.findall(text)
        if self.negation:
            tokens = mark_negation(tokens)
        return tokens
