def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b
