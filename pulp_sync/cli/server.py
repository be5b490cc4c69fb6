"""The REST API from the command line: `api` serves it (nginx before gunicorn, pulp_sync/api/server.py),
`createuser` makes the users who call it and `deleteuser` takes one away (pulp_sync/api/auth.py)."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import click

from pulp_base.nginx import NginxNotFound
from pulp_sync import defaults
from pulp_sync.cli.shared import UsageProblem, open_database
from pulp_sync.errors import ApiFailed

__all__ = ["HostPort", "ProxySide", "api", "createuser", "deleteuser"]


class HostPort(click.ParamType):
    """--bind: `host:port` (`[::1]:port` for IPv6), a port from 0 to 65535 and a host this machine resolves,
    checked before gunicorn starts (which would retry an unknown host for seconds, or raise on a bad port)."""

    name = "host:port"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        host, colon, port = str(value).rpartition(":")
        if not colon or not host or not port.isdigit() or int(port) > 65535:
            self.fail(f"{value!r} is not host:port with a port from 0 to 65535, e.g. {defaults.API_BIND}", param, ctx)
        try:
            socket.getaddrinfo(host.removeprefix("[").removesuffix("]"), int(port), type=socket.SOCK_STREAM)
        except OSError as error:
            self.fail(f"{value!r}: the host {host!r} cannot be resolved ({error.strerror or error})", param, ctx)
        return str(value)


class ProxySide(HostPort):
    """--behind-proxy: a unix socket's path (anything with a `/`, `unix:` before it or not), or host:port as
    --bind takes it."""

    name = "socket|host:port"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value)
        if "/" in text:
            path = Path(text.removeprefix("unix:")).absolute()
            if len(str(path)) > defaults.API_SOCKET_PATH_BYTES:
                self.fail(f"{text!r}: a unix socket's path may have {defaults.API_SOCKET_PATH_BYTES} bytes", param, ctx)
            return f"unix:{path}"
        return super().convert(value, param, ctx)


@click.command()
@click.option("--bind", type=HostPort(), default=defaults.API_BIND, show_default=True,
              help="host:port nginx listens on (Pulp's port by default); port 0 picks one.")
@click.option("--workers", type=click.IntRange(min=1), default=defaults.API_WORKERS, show_default=True,
              help="gunicorn worker processes (and as many of nginx's).")
@click.option("--threads", type=click.IntRange(min=1), default=defaults.API_THREADS, show_default=True,
              help="Request threads per gunicorn worker.")
@click.option("--behind-proxy", "proxy_side", type=ProxySide(), metavar="SOCKET|HOST:PORT",
              help="Serve gunicorn alone there, for a proxy of your own (which must bound what clients may "
              "hold, docs/api.md), instead of nginx on --bind.")
@click.option("--accel-redirect", metavar="PREFIX",
              help="With --behind-proxy: the proxy's internal location (/prefix/) that sends the content app's "
              "files from the artifact store, by X-Accel-Redirect [default: gunicorn sends them].")
def api(bind: str, workers: int, threads: int, proxy_side: str | None, accel_redirect: str | None) -> None:
    """Serve the REST API: nginx on --bind before gunicorn, as one (Pulp 3's API under /pulp/api/v3/, which
    pulp-cli works with, the deprecated pulp-sync one under /api/v3/, and the content app under
    /pulp/content/). The syncs it starts run on `pulp-sync worker`."""
    if accel_redirect is not None:
        if proxy_side is None:
            raise click.BadParameter("only with --behind-proxy (pulp-sync api's own nginx has its own)",
                                     param_hint="--accel-redirect")
        os.environ["PULP_SYNC_CONTENT_ACCEL_REDIRECT"] = accel_redirect  # checked with the settings, one line
    open_database()
    from pulp_sync.api.server import serve, serve_behind_proxy
    from pulp_sync.database import close_before_fork

    close_before_fork()  # gunicorn forks its workers: each must open its own connection
    if proxy_side is not None:
        serve_behind_proxy(proxy_side, workers, threads)
        return
    try:
        serve(bind, workers, threads)
    except (ApiFailed, NginxNotFound) as error:
        raise click.ClickException(str(error)) from error


@click.command()
@click.argument("name")
@click.option("--password", envvar="PULP_SYNC_PASSWORD", help="[default: asked unless --token]")
@click.option("--token", is_flag=True, help="Print the user's API token (made on first use) on stdout.")
@click.option("--admin/--no-admin", default=None,
              help="Make the user an admin, who sees and changes every user's objects (or no longer one) "
              "[default: a new user is none, an existing one keeps what it is].")
def createuser(name: str, password: str | None, token: bool, admin: bool | None) -> None:
    """Create an API user, or set an existing one's password; with --token, print its token.

    The password may come from $PULP_SYNC_PASSWORD, out of sight of `ps`. A user made with --token
    and no password can use the API with its token only. Users see only what they created or were
    given a role on; admins see everything (docs/api.md).
    """
    if password is None and not token:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    if password == "":
        raise click.BadParameter("must not be empty", param_hint="--password")
    open_database()
    from pulp_sync.api.auth import save_user, token_for

    user, created = save_user(name, password, admin)
    kind = "admin" if user.is_superuser else "user"
    click.echo(f"{'Created' if created else 'Updated'} {kind} {name}", err=True)
    if token:
        click.echo(token_for(user))


@click.command()
@click.argument("name")
def deleteuser(name: str) -> None:
    """Delete an API user, canceling their waiting tasks first (a task waits on its dispatcher's behalf).

    Their roles go with them: what they alone owned is for admins only, and the distributions they alone
    owned stop serving. Their finished and running tasks stay, naming no one (docs/api.md).
    """
    open_database()
    from pulp_sync.api.auth import delete_user

    try:
        canceled = delete_user(name)
    except LookupError as error:
        raise UsageProblem(str(error)) from error
    click.echo(f"Deleted user {name}; canceled {canceled} waiting task{'' if canceled == 1 else 's'}", err=True)
