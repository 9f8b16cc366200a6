"""Error responses."""


def validation_error(field, message):
    """(status, body) for a request whose `field` failed validation; body is JSON-serialisable."""
    # The frontend's form library attaches the message to the field only in this exact shape.
    return 422, {"error": {"code": "validation_failed", "field": field, "message": message}}
