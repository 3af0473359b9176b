"""Webhooks: signed HTTP notifications of what a pipeline waits on (issue #18).

This app sits below generation, curation and evaluation (it imports none of them), so each may
call :func:`webhooks.services.emit` with one line.
"""


def emit(event: str, **data) -> None:
    """Notify the webhooks subscribed to `event` after the current transaction commits (see
    webhooks.services.emit). Imported lazily so that importing this package loads no models."""
    from webhooks.services import emit as _emit

    _emit(event, **data)
