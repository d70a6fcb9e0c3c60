"""Feature templates of the tagger (strings; the model maps them to rows of its weight matrix)."""

import re


def shape(word):
    s = re.sub("[A-Z]", "X", word)
    s = re.sub("[a-z]", "x", s)
    s = re.sub("[0-9]", "d", s)
    return re.sub(r"(.)\1+", r"\1\1", s)


def token_features(tokens, i, prev_tag, prev2_tag):
    word = tokens[i]
    lower = word.lower()
    prev_word = tokens[i - 1].lower() if i > 0 else "<s>"
    next_word = tokens[i + 1].lower() if i + 1 < len(tokens) else "</s>"
    return [
        "bias",
        "w=" + lower,
        "suf3=" + lower[-3:],
        "pre2=" + lower[:2],
        "shape=" + shape(word),
        "first=" + str(i == 0),
        "t-1=" + prev_tag,
        "t-2,t-1=" + prev2_tag + "," + prev_tag,
        "w-1=" + prev_word,
        "w+1=" + next_word,
        "t-1,w=" + prev_tag + "," + lower,
        "shape-1=" + (shape(tokens[i - 1]) if i > 0 else "<s>"),
        "shape+1=" + (shape(tokens[i + 1]) if i + 1 < len(tokens) else "</s>"),
    ]
