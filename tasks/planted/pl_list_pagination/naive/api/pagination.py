"""Pages of the list endpoints."""


def page_numbers(total, per_page):
    """The valid values of the `page` query parameter for `total` items, in order."""
    return list(range(1, -(-total // per_page) + 1))


def paginate(items, page, per_page):
    """The items on `page`; an empty list past the end."""
    if page < 1:
        return []
    return list(items[(page - 1) * per_page:page * per_page])
