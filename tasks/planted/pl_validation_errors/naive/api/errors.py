"""Error responses."""


def validation_error(field, message):
    """(status, body) for a request whose `field` failed validation; body is JSON-serialisable."""
    return 400, {"error": f"{field} {message}", "field": field}
