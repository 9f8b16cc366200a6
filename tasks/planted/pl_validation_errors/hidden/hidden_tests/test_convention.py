from api.errors import validation_error


def test_status_is_422():
    status, _ = validation_error("email", "is not an email address")
    assert status == 422


def test_body_is_the_error_envelope():
    _, body = validation_error("email", "is not an email address")
    assert body == {"error": {"code": "validation_failed", "field": "email", "message": "is not an email address"}}
