"""bm25kit: BM25 retrieval with an in-memory inverted index."""
