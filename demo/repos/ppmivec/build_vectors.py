"""Build PPMI-SVD word vectors from a tokenised corpus."""

import argparse
import os

from ppmivec.cooc import build_vocab, cooccurrence, read_corpus
from ppmivec.io import save_vectors
from ppmivec.ppmi import ppmi, svd_vectors


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", default="data/corpus_mini.txt")
    parser.add_argument("--out", default="vectors/ppmi_svd.txt")
    parser.add_argument("--window", type=int, default=2)
    parser.add_argument("--min_count", type=int, default=5)
    parser.add_argument("--dim", type=int, default=50)
    parser.add_argument("--cds", type=float, default=0.75)
    parser.add_argument("--eig", type=float, default=0.5)
    args = parser.parse_args()

    sentences = read_corpus(args.corpus)
    vocab = build_vocab(sentences, args.min_count)
    print(f"Corpus: {len(sentences)} sentences, {sum(map(len, sentences))} tokens; vocabulary {len(vocab)} words")
    counts = cooccurrence(sentences, vocab, args.window)
    print(f"Co-occurrence matrix: {int(counts.sum())} pairs (window {args.window})")
    vectors = svd_vectors(ppmi(counts, args.cds), args.dim, args.eig)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    save_vectors(args.out, vocab, vectors)
    print(f"Saved {len(vocab)} vectors of dimension {vectors.shape[1]} to {args.out}")


if __name__ == "__main__":
    main()
