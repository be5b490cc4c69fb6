"""The API's front: nginx's configuration, made from the service's settings (docs/api.md lists each directive).

nginx stands before gunicorn, as in Pulp's own installations, and owns every bound that faces a client:
it reads each request whole (the head within its deadline, the body to a temporary file) before gunicorn
sees it, takes each answer whole from gunicorn (to a temporary file past its buffers) before it sends it,
and sends the content app's files itself once Django has decided access (X-Accel-Redirect to an internal
location), so that no Python thread ever waits on a client. What one client address may hold at once is
bounded by requests in progress (limit_conn); idle connections cost a slot until the header deadline.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from string import Template

from django.conf import settings

from pulp_base import nginx
from pulp_sync import defaults

__all__ = ["FrontSettings", "render"]


@dataclass(frozen=True)
class FrontSettings:
    """What nginx applies to clients, from the environment's settings (pulp_sync.settings) and defaults."""

    header_timeout: float
    body_timeout: float
    send_timeout: float
    client_requests: int
    body_bytes: int

    @classmethod
    def from_settings(cls) -> FrontSettings:
        """The largest body is Django's bound on a body read whole (DATA_UPLOAD_MAX_MEMORY_SIZE, 2.5 MiB), which
        DRF's JSON parser does not apply: nginx bounds the API's bodies, before they are read at all."""
        return cls(
            header_timeout=settings.PULP_SYNC_API_HEADER_TIMEOUT,
            body_timeout=settings.PULP_SYNC_API_BODY_TIMEOUT,
            send_timeout=settings.PULP_SYNC_API_SEND_TIMEOUT,
            client_requests=settings.PULP_SYNC_API_CLIENT_REQUESTS,
            body_bytes=settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
        )


def render(front: FrontSettings, *, prefix: Path, socket: Path, host: str, port: int, workers: int,
           store: Path) -> str:
    """nginx's configuration: listen on host:port, pass requests to gunicorn on `socket`, send the files of
    `store` from defaults.API_CONTENT_LOCATION, write everything under `prefix`."""
    template = Template(resources.files("pulp_sync.api").joinpath("nginx.conf.template").read_text())
    return template.substitute(
        prefix=prefix,
        user=nginx.user_directive(),
        workers=workers,
        open_files=defaults.API_OPEN_FILES,
        connections=defaults.API_CONNECTIONS,
        header_timeout=_seconds(front.header_timeout),
        body_timeout=_seconds(front.body_timeout),
        send_timeout=_seconds(front.send_timeout),
        keepalive=_seconds(defaults.API_KEEPALIVE),
        linger=_seconds(defaults.API_LINGER),
        head_buffers=_buffers(defaults.API_HEAD_BUFFERS),
        body_bytes=front.body_bytes,
        body_buffer=defaults.API_BODY_BUFFER,
        client_requests=front.client_requests,
        listen=nginx.listen_address(host, port),
        socket=socket,
        answer_buffer=defaults.API_ANSWER_BUFFERS[1],
        answer_buffers=_buffers(defaults.API_ANSWER_BUFFERS),
        answer_timeout=_seconds(defaults.API_TIMEOUT + defaults.API_STOP_SECONDS),
        content_location=defaults.API_CONTENT_LOCATION,
        store=store.resolve(),
    )


def _seconds(seconds: float) -> str:
    """nginx's time: whole milliseconds, so that a deadline of 0.5 s is kept as it is set."""
    return f"{round(seconds * 1000)}ms"


def _buffers(buffers: tuple[int, int]) -> str:
    """nginx's `number size`."""
    return f"{buffers[0]} {buffers[1]}"
