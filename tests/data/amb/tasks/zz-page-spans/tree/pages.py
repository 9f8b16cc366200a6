"""Page selections as the print queue shows them."""


def compress(pages: list[int]) -> str:
    """The short form of `pages`, a sorted list of distinct page numbers."""
    raise NotImplementedError
