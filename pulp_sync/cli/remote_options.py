"""The command-line options of a Remote's settings, generated from `downloaders.REMOTE_SETTINGS`.

One option per setting, named after it (`rate_limit` -> `--rate-limit`), so a new setting is on the
command line the day it is added to DownloaderSettings. Secrets are never taken in clear on a
command line, where `ps` and the shell's history show them to everyone:

    --password-env VAR        the password is in the environment variable VAR
    --password-file PATH      the password is the first line of PATH
    --client-key-file PATH    the client certificate's key is in PATH
    --header 'Name: value'    a request header (repeatable); --header-env 'Name=VAR' takes its value
                              from $VAR, for headers that carry a token: the remote records the
                              header as given by reference, and the API never shows its value

An option left out keeps the remote's value (or the downloader's default for a new remote). A value
breaking its setting's rule (downloaders/settings.py: a timeout past the bound every engine can wait,
a header that would end the request early, a proxy that is not http or https) is a usage error naming
the option, as the API and the harness's specs refuse it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import click

from downloaders.errors import SettingError
from downloaders.settings import REMOTE_SETTINGS, RemoteSetting, check_header, concurrency_settings, is_pem

__all__ = ["remote_options", "settings_from_options", "refuse_password_in_url"]

F = TypeVar("F", bound=Callable[..., Any])

_OPTIONED = tuple(setting for setting in REMOTE_SETTINGS if setting.option)
"""The settings with options of their own."""
_PREFIX = "setting__"
"""The parameter names of the generated options start with this, so a command can tell them apart."""


class _Checked(click.ParamType):
    """A number or text as its setting takes it (`RemoteSetting.coerce`): typed, and passing the
    setting's rule (a concurrency of 1 or more, a finite timeout no longer than every engine can wait, an
    http or https proxy): the rule the API and the harness's specs apply, with the same message."""

    def __init__(self, setting: RemoteSetting) -> None:
        self.setting = setting
        self.name = "|".join([{float: "number", int: "integer"}.get(setting.kind, "text"), *setting.words])

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return self.setting.coerce(value)
        except ValueError as error:
            self.fail(str(error), param, ctx)


def remote_options(function: F) -> F:
    """Add an option (or the -env/-file pair of a secret) for every Remote setting that has one to a click
    command (`auto_concurrency` is `--concurrency auto`)."""
    for setting in reversed(_OPTIONED):
        for option in reversed(_options_of(setting)):
            function = option(function)
    return function


def settings_from_options(options: dict[str, Any]) -> dict[str, Any]:
    """The Remote settings given on the command line, secrets read from where they were named, and with
    headers the Remote's `secret_headers`, the names of those given by reference; the generated options
    are removed from `options`. Raises click.BadParameter on an unset variable or an unreadable file."""
    given = {name.removeprefix(_PREFIX): options.pop(name) for name in list(options) if name.startswith(_PREFIX)}
    settings: dict[str, Any] = {}
    for setting in _OPTIONED:
        value = _value_of(setting, given)
        if value is not None:
            settings[setting.name] = value
    if "download_concurrency" in settings:
        settings.update(concurrency_settings(settings.pop("download_concurrency")))
    if "headers" in settings:
        settings["secret_headers"] = list(_references(given["headers_env"])) or None
    return settings


def refuse_password_in_url(url: str, param_hint: str) -> None:
    """A URL with `user:password@` would put the password on the command line: refuse it, saying how."""
    if urlsplit(url).password is not None:
        raise click.BadParameter(
            "holds a password; give the user with --username and the password with --password-env VAR or "
            "--password-file PATH, never on a command line",
            param_hint=param_hint,
        )


def _flag(setting: RemoteSetting, suffix: str = "") -> str:
    return setting.flag + suffix


def _options_of(setting: RemoteSetting) -> list[Callable[[F], F]]:
    """The click options of one setting."""
    name = _PREFIX + setting.name
    if setting.secret and setting.kind is Path:
        return [click.option(_flag(setting, "-file"), name, type=click.Path(exists=True, dir_okay=False),
                             help=f"{setting.help.rstrip('.')}: the file it is in (its PEM text is saved on the "
                             "remote, as Pulp keeps it).")]
    if setting.secret:
        return [
            click.option(_flag(setting, "-env"), name + "_env", metavar="VAR",
                         help=f"{setting.help} From the environment variable VAR."),
            click.option(_flag(setting, "-file"), name + "_file", type=click.Path(exists=True, dir_okay=False),
                         help=f"{setting.help} From the first line of this file."),
        ]
    if setting.kind is dict:
        return [
            click.option("--header", name, multiple=True, metavar="'NAME: VALUE'",
                         help="A request header; repeatable."),
            click.option("--header-env", name + "_env", multiple=True, metavar="NAME=VAR",
                         help="A request header whose value is in the environment variable VAR; repeatable."),
        ]
    if setting.kind is bool:
        return [click.option(_flag(setting) + "/" + _flag(setting).replace("--", "--no-", 1), name, default=None,
                             help=setting.help)]
    decls = [_flag(setting), name] + (["--concurrency"] if setting.name == "download_concurrency" else [])
    return [click.option(*decls, type=_type_of(setting), help=setting.help)]


def _type_of(setting: RemoteSetting) -> click.ParamType:
    """The click type of a setting's option: a file for a certificate, or a value checked by its setting."""
    if setting.kind is Path:
        return click.Path(exists=True, dir_okay=False)
    return _Checked(setting)


def _value_of(setting: RemoteSetting, given: dict[str, Any]) -> Any:
    """One setting's value from the parsed options, or None when it was not given."""
    if setting.kind is dict:
        return _headers(given[setting.name], given[setting.name + "_env"])
    if setting.secret and setting.kind is not Path:
        return _secret(setting, given[setting.name + "_env"], given[setting.name + "_file"])
    if setting.kind is Path and given[setting.name] is not None:
        return _pem_text(setting, given[setting.name])
    return given[setting.name]


def _pem_text(setting: RemoteSetting, path: str) -> str:
    """A certificate's or key's file as the PEM text the remote keeps: the API's users and the workers
    (on other hosts, maybe) see the certificate itself, never a path on this machine."""
    hint = _flag(setting, "-file" if setting.secret else "")
    try:
        text = Path(path).read_text(encoding="ascii")
    except OSError as error:
        raise click.BadParameter(f"{path} cannot be read: {error.strerror or error}", param_hint=hint) from error
    except UnicodeDecodeError as error:  # PEM is ASCII; a DER file, or not a certificate at all
        raise click.BadParameter(
            f"{path} is not PEM text (byte {error.start} is not ASCII): a DER certificate converts with "
            f"`openssl x509 -inform der -in {path} -out {path}.pem`", param_hint=hint) from error
    if not is_pem(text):
        raise click.BadParameter(f"{path} holds no PEM block (-----BEGIN ...)", param_hint=hint)
    return text


def _secret(setting: RemoteSetting, variable: str | None, path: str | None) -> str | None:
    if variable is not None and path is not None:
        raise click.BadParameter("give one of the two, not both", param_hint=f"{_flag(setting, '-env')} / -file")
    if variable is not None:
        return _from_environment(variable, _flag(setting, "-env"))
    if path is not None:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
        if not lines or not lines[0]:
            raise click.BadParameter(f"{path} is empty", param_hint=_flag(setting, "-file"))
        return lines[0]
    return None


def _headers(pairs: tuple[str, ...], from_environment: tuple[str, ...]) -> dict[str, str] | None:
    headers: dict[str, str] = {}
    for pair in pairs:
        name, colon, value = pair.partition(":")
        if not colon or not name.strip():
            raise click.BadParameter(f"{pair!r} is not 'NAME: VALUE'", param_hint="--header")
        headers[name.strip()] = _checked_header(name.strip(), value.strip(), "--header")
    for name, variable in _references(from_environment).items():
        headers[name] = _checked_header(name, _from_environment(variable, "--header-env"), "--header-env")
    return headers or None


def _checked_header(name: str, value: str, param_hint: str) -> str:
    """`value`, if a request can carry the header as it is (downloaders.settings.check_header)."""
    try:
        check_header(name, value)
    except SettingError as error:
        raise click.BadParameter(str(error), param_hint=param_hint) from error
    return value


def _references(pairs: tuple[str, ...]) -> dict[str, str]:
    """--header-env's NAME=VAR pairs: each header's name and the variable its value is in."""
    references: dict[str, str] = {}
    for pair in pairs:
        name, equals, variable = pair.partition("=")
        if not equals or not name.strip() or not variable.strip():
            raise click.BadParameter(f"{pair!r} is not NAME=VAR", param_hint="--header-env")
        references[name.strip()] = variable.strip()
    return references


def _from_environment(variable: str, param_hint: str) -> str:
    value = os.environ.get(variable)
    if not value:
        raise click.BadParameter(f"the environment variable {variable} is not set (or empty)", param_hint=param_hint)
    return value
