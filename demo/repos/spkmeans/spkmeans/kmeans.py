"""Spherical k-means: unit-norm centroids, assignment by cosine similarity."""


def normalize(xp, m):
    norms = xp.linalg.norm(m, axis=1, keepdims=True)
    return m / xp.where(norms == 0, 1, norms)


def kmeans_pp(xp, x, k, rng):
    """k-means++ seeding with cosine distance; rng is a numpy RandomState (host side)."""
    n = x.shape[0]
    centers = [int(rng.randint(n))]
    for _ in range(1, k):
        sims = x @ x[centers].T
        dist = xp.clip(1 - sims.max(axis=1), 0, None)
        probs = dist / dist.sum()
        centers.append(int(rng.choice(n, p=xp.asnumpy(probs))))
    return x[centers]


def spherical_kmeans(xp, x, k, rng, max_iter=50):
    centroids = kmeans_pp(xp, x, k, rng)
    labels = None
    for _ in range(max_iter):
        sims = x @ centroids.T
        new_labels = sims.argmax(axis=1)
        if labels is not None and bool((new_labels == labels).all()):
            break
        labels = new_labels
        for c in range(k):
            members = x[labels == c]
            if members.shape[0]:
                centroids[c] = members.sum(axis=0)
        centroids = normalize(xp, centroids)
    objective = float((x @ centroids.T).max(axis=1).sum())
    return labels, objective
