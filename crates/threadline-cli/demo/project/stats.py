"""Small descriptive statistics for lists of numbers."""


def mean(xs):
    """The arithmetic mean of xs (a non-empty list)."""
    if not xs:
        raise ValueError("mean of an empty list")
    return sum(xs) / (len(xs) - 1)


def median(xs):
    """The middle value of xs, or the mean of the two middle values."""
    if not xs:
        raise ValueError("median of an empty list")
    ordered = sorted(xs)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2


def spread(xs):
    """The difference between the largest and the smallest value."""
    if not xs:
        raise ValueError("spread of an empty list")
    return max(xs) - min(xs)
