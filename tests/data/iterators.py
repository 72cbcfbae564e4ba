"""Taking batches from the data pipeline's iterators in tests."""


def take(it, n):
    return [next(it) for _ in range(n)]
