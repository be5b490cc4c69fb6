"""`pulp-sync sync` takes every Remote setting, generated from one list, and secrets never in clear."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from downloaders import DownloaderSettings
from downloaders.defaults import AUTO_START
from downloaders.settings import REMOTE_SETTINGS
from pulp_sync.cli import cli
from pulp_sync.cli.sync import sync
from pulp_sync.models import Remote, RepositoryVersion
from tests.servers import self_signed_certificate


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), prog_name="pulp-sync", env=env)


def option_names() -> set[str]:
    return {name for param in sync.params for name in (*param.opts, *param.secondary_opts)}


@pytest.mark.parametrize("setting", REMOTE_SETTINGS, ids=lambda s: s.name)
def test_every_remote_setting_has_an_option(setting) -> None:  # type: ignore[no-untyped-def]
    flag = "--" + setting.name.replace("_", "-")
    if setting.name == "auto_concurrency":
        assert flag not in option_names(), "it is --concurrency auto: one spelling"
    elif setting.name == "headers":
        assert {"--header", "--header-env"} <= option_names()
    elif setting.secret and setting.kind is Path:
        assert flag + "-file" in option_names() and flag not in option_names()
    elif setting.secret:
        assert {flag + "-env", flag + "-file"} <= option_names() and flag not in option_names(), "never in clear"
    else:
        assert flag in option_names()


def test_the_remote_fields_and_the_list_of_settings_are_the_same() -> None:
    fields = {field.name for field in Remote._meta.concrete_fields}
    downloader_fields = {field.name for field in dataclasses.fields(DownloaderSettings)}
    assert fields & downloader_fields == {setting.name for setting in REMOTE_SETTINGS}
    assert len(REMOTE_SETTINGS) == 19


def test_settings_are_saved_on_the_remote(db: Path, server: str, tmp_path: Path) -> None:
    ca, _ = self_signed_certificate(tmp_path)
    proxy_secret = tmp_path / "proxy-password"
    proxy_secret.write_text("proxy s3cret\nsecond line ignored\n")
    result = invoke(
        "sync", server + "good/PULP_MANIFEST", "--connect-timeout", "7", "--sock-connect-timeout", "6",
        "--sock-read-timeout", "5", "--total-timeout", "40", "--max-retries", "0", "--rate-limit", "1000",
        "--header", "X-Trace: abc", "--header-env", "Authorization=TOKEN", "--username", "me",
        "--password-env", "REMOTE_PASSWORD", "--proxy-username", "p", "--proxy-password-file", str(proxy_secret),
        "--no-tls-validation", "--ca-cert", str(ca), "--concurrency", "3",
        env={"REMOTE_PASSWORD": "hunter2", "TOKEN": "Bearer t0ken"},
    )
    assert result.exit_code == 0, result.output
    remote = Remote.objects.get(name="good")
    assert (remote.connect_timeout, remote.sock_connect_timeout, remote.sock_read_timeout) == (7, 6, 5)
    assert (remote.total_timeout, remote.max_retries, remote.rate_limit) == (40, 0, 1000)
    assert remote.headers == {"X-Trace": "abc", "Authorization": "Bearer t0ken"}
    assert (remote.username, remote.password) == ("me", "hunter2")
    assert (remote.proxy_username, remote.proxy_password) == ("p", "proxy s3cret")
    assert (remote.tls_validation, remote.ca_cert, remote.download_concurrency) == (False, ca.read_text(), 3)


def test_concurrency_auto_turns_auto_concurrency_on_and_a_number_turns_it_off(db: Path, server: str) -> None:
    url = server + "good/PULP_MANIFEST"
    auto = invoke("sync", url, "--concurrency", "auto", "--max-concurrency", "12", "--json")
    assert auto.exit_code == 0, auto.output
    report = json.loads(auto.stdout)
    assert (report["auto_concurrency"], report["connections"]) == (True, 12), report
    trajectory = report["concurrency_trajectory"]
    assert trajectory[0] == {"seconds": 0.0, "limit": AUTO_START} and all(1 <= c["limit"] <= 12 for c in trajectory)
    remote = Remote.objects.get(name="good")
    assert (remote.auto_concurrency, remote.max_concurrency, remote.download_concurrency) == (True, 12, None)

    fixed = invoke("sync", url, "--repository", "good", "--concurrency", "3", "--json")
    assert fixed.exit_code == 0, fixed.output
    remote.refresh_from_db()
    assert (remote.auto_concurrency, remote.download_concurrency) == (False, 3)
    assert json.loads(fixed.stdout)["auto_concurrency"] is False


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (("--concurrency", "many"), {}, "download_concurrency: 'many' is not a whole number (or auto)"),
        (("--max-concurrency", "0"), {}, "max_concurrency must be from 1 to 256, not 0"),
        (("--password-env", "NOT_SET_ANYWHERE"), {}, "the environment variable NOT_SET_ANYWHERE is not set"),
        (("--sock-read-timeout", "inf"), {}, "'inf' is not a finite number"),
        (("--rate-limit", "nan"), {}, "'nan' is not a finite number"),
        (("--header", "no colon"), {}, "'no colon' is not 'NAME: VALUE'"),
        (("--header-env", "Authorization"), {}, "'Authorization' is not NAME=VAR"),
        (("--password-env", "A", "--password-file", "/dev/null"), {"A": "x"}, "give one of the two, not both"),
        (("--ca-cert", "/dev/null"), {}, "/dev/null holds no PEM block"),
        (("--ca-cert", sys.executable), {}, f"{sys.executable} is not PEM text (byte "),
        (("--client-cert", "/dev/null", "--client-key-file", "/dev/null"), {}, "/dev/null holds no PEM block"),
    ],
)
def test_bad_options_are_usage_errors(db: Path, server: str, args: tuple[str, ...], env: dict[str, str],
                                      message: str) -> None:
    result = invoke("sync", server + "good/PULP_MANIFEST", *args, env=env)
    assert result.exit_code == 2 and message in result.stderr, result.output
    assert not Remote.objects.exists(), "nothing is saved"


def test_a_password_in_the_url_is_refused(db: Path, server: str) -> None:
    url = server.replace("http://", "http://me:hunter2@") + "good/PULP_MANIFEST"
    result = invoke("sync", url)
    assert result.exit_code == 2 and "--password-env VAR" in result.stderr
    assert not Remote.objects.exists()


def test_manifest_file_syncs_its_lines_from_the_url(db: Path, server: str, tree: Path, tmp_path: Path) -> None:
    lines = (tree / "good" / "PULP_MANIFEST").read_text().splitlines(keepends=True)
    sample = tmp_path / "sample"
    sample.write_text("".join(lines[:3]))
    result = invoke("sync", server + "good/PULP_MANIFEST", "--manifest-file", str(sample), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["content_units"], report["artifacts_downloaded"]) == (3, 3)
    version = RepositoryVersion.objects.get()
    assert sorted(c.relative_path for c in version.content.all()) == sorted(line.split(",")[0] for line in lines[:3])


def test_a_url_of_another_origin_leaves_the_credentials_behind(db: Path, server: str) -> None:
    """The API's rule on the command line too: credentials stay with the origin they were given for."""
    given = invoke("sync", server + "good/PULP_MANIFEST", "--username", "me", "--password-env", "REMOTE_PASSWORD",
                   "--header", "X-Token: t0ken", env={"REMOTE_PASSWORD": "hunter2"})
    assert given.exit_code == 0, given.output
    same_origin = invoke("sync", server + "subset/PULP_MANIFEST", "--repository", "good")
    assert same_origin.exit_code == 0, same_origin.output
    assert Remote.objects.get(name="good").password == "hunter2"

    elsewhere = server.replace("127.0.0.1", "localhost")
    moved = invoke("sync", elsewhere + "good/PULP_MANIFEST", "--repository", "good")
    assert moved.exit_code == 0, moved.output
    remote = Remote.objects.get(name="good")
    assert (remote.url, remote.username, remote.password, remote.headers) == (elsewhere + "good/PULP_MANIFEST",
                                                                              None, None, None)


def test_a_new_proxy_leaves_the_credentials_behind(db: Path, server: str) -> None:
    """The API's rule on the command line too: a proxy set on a plain-http remote would read its credentials,
    unless the same command gives them again. (The fixture server serves as the proxy too.)"""
    credentials = ("--username", "me", "--password-env", "REMOTE_PASSWORD", "--header-env", "X-Token=TOKEN")
    env = {"REMOTE_PASSWORD": "hunter2", "TOKEN": "t0ken"}
    given = invoke("sync", server + "good/PULP_MANIFEST", *credentials, env=env)
    assert given.exit_code == 0, given.output

    proxied = invoke("sync", server + "good/PULP_MANIFEST", "--proxy-url", server)
    assert proxied.exit_code == 0, proxied.output
    remote = Remote.objects.get(name="good")
    assert (remote.proxy_url, remote.username, remote.password, remote.headers) == (server, None, None, None)

    other_proxy = server.replace("127.0.0.1", "localhost")
    again = invoke("sync", server + "good/PULP_MANIFEST", "--proxy-url", other_proxy, *credentials, env=env)
    assert again.exit_code == 0, again.output
    remote = Remote.objects.get(name="good")
    assert (remote.proxy_url, remote.password, remote.headers) == (other_proxy, "hunter2", {"X-Token": "t0ken"})
