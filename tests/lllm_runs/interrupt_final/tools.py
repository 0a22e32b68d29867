def search(q: str) -> str:
    """Search the notes."""
    return "nothing about " + q
