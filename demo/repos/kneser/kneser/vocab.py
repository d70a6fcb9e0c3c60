from collections import Counter

UNK, BOS, EOS = "<unk>", "<s>", "</s>"


def read_sentences(path):
    with open(path, encoding="utf-8") as f:
        return [line.split() for line in f if line.strip()]


class Vocabulary:
    def __init__(self, sentences, min_count=1):
        counts = Counter(w for s in sentences for w in s)
        self.words = {w for w, c in counts.items() if c >= min_count} | {UNK, EOS}

    def __len__(self):
        return len(self.words)

    def map(self, sentence):
        return [w if w in self.words else UNK for w in sentence]
