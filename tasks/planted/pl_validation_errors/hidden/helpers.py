"""Helpers of pl_validation_errors' judge, run in the artifact's process by memgrid_check.call(helpers=...)."""


def unpacked(field, message):
    """validation_error(field, message) unpacked as the old test did (`status, body = ...`), as a tuple."""
    from api.errors import validation_error
    status, body = validation_error(field, message)
    return (status, body)
