"""Tokenisation, stopwords and a light suffix-stripping stemmer."""

import re

STOPWORDS = frozenset(
    """a an and are as at be but by for from has have in is it its of on or that the this to was were
    what when where which who why with how does do did can not no than then there these those their""".split()
)
_WORD = re.compile(r"[a-z0-9]+")
_SUFFIXES = ("ational", "ization", "fulness", "ousness", "iveness", "ations", "ation", "ments", "ment", "ness",
             "ings", "ing", "ies", "ied", "ers", "er", "ed", "es", "ly", "s")


def stem(word):
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def analyze(text, use_stemmer=True, remove_stopwords=True):
    tokens = _WORD.findall(text.lower())
    if remove_stopwords:
        tokens = [t for t in tokens if t not in STOPWORDS]
    if use_stemmer:
        tokens = [stem(t) for t in tokens]
    return tokens
