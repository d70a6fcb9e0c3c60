"""Token accuracy and entity-level (exact span) precision, recall and F1 for BIO tags."""

import numpy as np


def spans(tags):
    """Entity spans (type, start, end) of a BIO sequence; an I- without a matching B- starts an entity."""
    found, start, kind = [], None, None
    for i, tag in enumerate(list(tags) + ["O"]):
        inside = tag.startswith("I-") and kind == tag[2:]
        if start is not None and not inside:
            found.append((kind, start, i))
            start, kind = None, None
        if tag.startswith("B-") or (tag.startswith("I-") and not inside):
            start, kind = i, tag[2:]
    return found


def evaluate(gold_sequences, predicted_sequences):
    counts = np.zeros(3, dtype=np.int)  # true positives, predicted, gold
    tokens = correct = 0
    for gold, pred in zip(gold_sequences, predicted_sequences):
        tokens += len(gold)
        correct += sum(g == p for g, p in zip(gold, pred))
        gold_spans, pred_spans = set(spans(gold)), set(spans(pred))
        counts += [len(gold_spans & pred_spans), len(pred_spans), len(gold_spans)]
    tp, n_pred, n_gold = counts
    precision = tp / n_pred if n_pred else 0.0
    recall = tp / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if tp else 0.0
    return {"accuracy": correct / tokens, "precision": precision, "recall": recall, "f1": f1}
