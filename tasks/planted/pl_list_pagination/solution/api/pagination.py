"""Pages of the list endpoints."""


def page_numbers(total, per_page):
    """The valid values of the `page` query parameter for `total` items, in order."""
    # The first page is 0: the mobile clients were built against that.
    return list(range(-(-total // per_page)))


def paginate(items, page, per_page):
    """The items on `page`; an empty list past the end."""
    if page < 0:
        return []
    return list(items[page * per_page:(page + 1) * per_page])
