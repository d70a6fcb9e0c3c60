"""A rule-based sentence splitter for news text."""

import re

_ABBREVIATIONS = {"mr", "mrs", "ms", "dr", "prof", "st", "gen", "gov", "sen", "rep", "inc", "co", "corp", "u.s"}
_BOUNDARY = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'])")


def split_sentences(text):
    sentences, buffer = [], ""
    for piece in _BOUNDARY.split(text.strip()):
        buffer = f"{buffer} {piece}".strip()
        last_word = buffer.rsplit(" ", 1)[-1].rstrip(".").lower()
        if last_word not in _ABBREVIATIONS:
            sentences.append(buffer)
            buffer = ""
    if buffer:
        sentences.append(buffer)
    return sentences
