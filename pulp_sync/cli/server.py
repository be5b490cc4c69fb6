"""The REST API from the command line: `api` serves it (pulp_sync/api/server.py), `createuser` makes the
users who call it (pulp_sync/api/auth.py)."""

from __future__ import annotations

import socket
from typing import Any

import click

from pulp_sync import defaults
from pulp_sync.cli.shared import open_database

__all__ = ["HostPort", "api", "createuser"]


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


@click.command()
@click.option("--bind", type=HostPort(), default=defaults.API_BIND, show_default=True,
              help="host:port to listen on (Pulp's port by default); port 0 picks one.")
@click.option("--workers", type=click.IntRange(min=1), default=defaults.API_WORKERS, show_default=True,
              help="gunicorn worker processes.")
@click.option("--threads", type=click.IntRange(min=1), default=defaults.API_THREADS, show_default=True,
              help="Request threads per worker.")
def api(bind: str, workers: int, threads: int) -> None:
    """Serve the REST API with gunicorn: Pulp 3's under /pulp/api/v3/ (pulp-cli works with it), the deprecated
    pulp-sync one under /api/v3/. The syncs it starts run on `pulp-sync worker`."""
    open_database()
    from django.db import connections

    from pulp_sync.api.server import serve

    connections.close_all()  # gunicorn forks its workers: each must open its own connection
    serve(bind, workers, threads)


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
