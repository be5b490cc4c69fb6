"""Users of the API side by side (Django's test client on conftest's sqlite database): objects belong
to their creator, Pulp's roles share them, admins see everything, header values are shown to owners
only and secret ones to no one, a taken name says nothing more of an object the user may not see; and
what no user may do: keep a secret where a change of the remote would expose it (another origin, a new
proxy, TLS validation off, another CA), name a host the remote-address policy refuses, put credentials
in a URL, give a path for a certificate, ask for a page without end, send a body that does not parse.
test_api.py checks the same ownership over real HTTP, test_pulp_cli.py with pulp-cli.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from rest_framework.test import APIClient
from rest_framework.validators import UniqueValidator

from pulp_sync.api.auth import save_user
from pulp_sync.models import Artifact, Remote, Repository, Task
from pulp_sync.tasking.tasks import dispatch_sync
from tests.pulp_sync.cli.test_remote_options import invoke
from tests.pulp_sync.tasking.test_tasks import queue, redis  # noqa: F401 - fixtures, used by name
from tests.pulp_sync.test_pulp_api import call, created
from tests.servers import self_signed_certificate

NOT_FOUND = {"detail": "No Remote matches the given query."}
REFUSED = {"detail": "You do not have permission to perform this action."}
NO_SUCH_REMOTE = {"remote": ["Invalid hyperlink - Object does not exist."]}
VIEWER = "file.fileremote_viewer"
NOT_PEM = "not PEM text: give the certificates themselves (-----BEGIN CERTIFICATE----- ...), not a path"
KEY = "-----BEGIN PRIVATE KEY-----\nMAA=\n-----END PRIVATE KEY-----\n"
"""A key block as the API checks it (base64 of a DER sequence), good enough where no TLS is made."""
HTTP, HTTPS = "http://127.0.0.1:8000/PULP_MANIFEST", "https://127.0.0.1:8443/PULP_MANIFEST"
PROXY, OTHER_PROXY, HTTPS_PROXY = "http://127.0.0.1:3128", "http://127.0.0.2:3128", "https://127.0.0.1:3129"
ORIGIN = {"username", "password", "headers"}
PROXY_CREDENTIALS = {"proxy_username", "proxy_password"}
AUTHORIZATION = {"remotes/file/file/": [{"Authorization": "Bearer t"}],
                 "/api/v3/remotes/": {"Authorization": "Bearer t"}}
"""An Authorization header in each dialect's shape, by the dialect's collection of remotes."""
TAKEN = {"remotes": {"name": ["remote with this name already exists."]},
         "repositories": {"name": ["repository with this name already exists."]}}


def client_of(name: str, admin: bool = False) -> APIClient:
    user, _ = save_user(name, None, admin=admin)
    client = APIClient(HTTP_HOST="localhost")
    client.force_authenticate(user)
    return client


@pytest.fixture
def alice(db: Path) -> APIClient:
    return client_of("alice")


@pytest.fixture
def bob(db: Path) -> APIClient:
    return client_of("bob")


@pytest.fixture
def admin(db: Path) -> APIClient:
    return client_of("admin", admin=True)


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    return self_signed_certificate(tmp_path)


@pytest.fixture
def secrets(certificate: tuple[Path, Path]) -> dict[str, Any]:
    """Every secret of a remote but its headers (AUTHORIZATION), as the API takes them."""
    cert, key = (path.read_text().strip() for path in certificate)  # as stored: DRF trims text
    return {"username": "a", "password": "secret", "client_cert": cert, "client_key": key, "proxy_username": "p",
            "proxy_password": "proxy-secret"}


def remote_and_repository(client: APIClient, url: str, **fields: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A remote (with `fields`) and a repository syncing from it, made by `client`'s user."""
    remote = created(client, "remotes/file/file/", {"name": "r", "url": url, **fields})
    repository = created(client, "repositories/file/file/", {"name": "repo", "remote": remote["pulp_href"]})
    return remote, repository


@pytest.mark.usefixtures("queue")
def test_another_users_objects_are_not_found(alice: APIClient, bob: APIClient, server: str) -> None:
    remote, repository = remote_and_repository(alice, server + "good/PULP_MANIFEST", username="a", password="secret")
    started = call(alice, "POST", repository["pulp_href"] + "sync/", {})
    assert started.status_code == 202, started.json()
    task = started.json()["task"]

    for method, href, body in [
        ("GET", remote["pulp_href"], None),
        ("PATCH", remote["pulp_href"], {"url": "http://127.0.0.1:9/PULP_MANIFEST"}),
        ("PUT", remote["pulp_href"], {"name": "mine", "url": "http://127.0.0.1:9/PULP_MANIFEST"}),
        ("DELETE", remote["pulp_href"], None),
        ("POST", remote["pulp_href"] + "add_role/", {"role": VIEWER, "users": ["bob"]}),
        ("GET", remote["pulp_href"] + "my_permissions/", None),
        ("GET", repository["pulp_href"], None),
        ("PATCH", repository["pulp_href"], {"name": "mine"}),
        ("DELETE", repository["pulp_href"], None),
        ("POST", repository["pulp_href"] + "sync/", {}),
        ("GET", repository["versions_href"], None),
        ("GET", task, None),
        ("PATCH", task, {"state": "canceled"}),
        ("GET", f"/api/v3/remotes/{remote['pulp_href'].split('/')[-2]}/", None),
        ("POST", f"/api/v3/repositories/{repository['pulp_href'].split('/')[-2]}/sync/", {"remote": "1"}),
    ]:
        answer = call(bob, method, href, body)
        assert answer.status_code == 404, (method, href, answer.content)
    for listed in ("remotes/file/file/", "repositories/file/file/", "tasks/", "/api/v3/remotes/", "/api/v3/tasks/"):
        assert call(bob, "GET", listed).json()["count"] == 0, listed

    mine = created(bob, "repositories/file/file/", {"name": "mine"})
    for body in ({"remote": remote["pulp_href"]}, {"remote": "/pulp/api/v3/remotes/file/file/999999/"}):
        refused = call(bob, "POST", mine["pulp_href"] + "sync/", body)
        assert (refused.status_code, refused.json()) == (400, NO_SUCH_REMOTE), "hers is as good as none"
    refused = call(bob, "PATCH", mine["pulp_href"], {"remote": remote["pulp_href"]})
    assert (refused.status_code, refused.json()) == (400, NO_SUCH_REMOTE)
    sync = f"/api/v3/repositories/{mine['pulp_href'].split('/')[-2]}/sync/"
    deprecated = call(bob, "POST", sync, {"remote": remote["pulp_href"].split("/")[-2]})
    assert (deprecated.status_code, deprecated.json()) == (400, NO_SUCH_REMOTE)

    assert call(alice, "GET", task).json()["state"] == "waiting", "hers: no worker takes this queue"
    assert Task.objects.get().dispatched_by.username == "alice"
    assert Remote.objects.get().password == "secret", "nothing changed"


@pytest.mark.usefixtures("queue")
def test_a_viewer_reads_and_an_owner_changes(alice: APIClient, bob: APIClient, server: str) -> None:
    remote, repository = remote_and_repository(alice, server + "good/PULP_MANIFEST")
    dispatch_sync(Repository.objects.get(), Remote.objects.get())  # a version with content, inline
    [version] = call(alice, "GET", repository["versions_href"]).json()["results"]
    content = f"content/file/files/?repository_version={version['pulp_href']}"
    assert call(alice, "GET", content).json()["count"] == 12
    assert call(bob, "GET", "content/file/files/").json()["count"] == 0
    hidden = call(bob, "GET", content)
    assert (hidden.status_code, hidden.json()) == (
        400, {"repository_version": [f"no repository version has the href {version['pulp_href']!r}"]}
    ), "as for a version that does not exist"

    given = call(alice, "POST", remote["pulp_href"] + "add_role/", {"role": VIEWER, "users": ["bob"]})
    assert (given.status_code, given.json()) == (201, {"role": VIEWER, "users": ["bob"], "groups": []})
    again = call(alice, "POST", remote["pulp_href"] + "add_role/", {"role": VIEWER, "users": ["bob"]})
    assert (again.status_code, again.json()) == (400, {"users": ["The role is already given to user 'bob'."]})
    assert call(bob, "GET", remote["pulp_href"]).json() == call(alice, "GET", remote["pulp_href"]).json()
    assert call(bob, "GET", remote["pulp_href"] + "my_permissions/").json() == {"permissions": ["file.view_fileremote"]}
    for method, href, body in [
        ("PATCH", remote["pulp_href"], {"url": "http://127.0.0.1:9/PULP_MANIFEST"}),
        ("DELETE", remote["pulp_href"], None),
        ("POST", remote["pulp_href"] + "add_role/", {"role": VIEWER, "users": ["bob"]}),
        ("GET", remote["pulp_href"] + "list_roles/", None),
    ]:
        answer = call(bob, method, href, body)
        assert (answer.status_code, answer.json()) == (403, REFUSED), (method, href)
    roles = call(alice, "GET", remote["pulp_href"] + "list_roles/").json()
    assert roles == {"roles": [{"role": "file.fileremote_owner", "users": ["alice"], "groups": []},
                               {"role": VIEWER, "users": ["bob"], "groups": []}]}
    mine = created(bob, "repositories/file/file/", {"name": "mine"})
    assert call(bob, "POST", mine["pulp_href"] + "sync/", {"remote": remote["pulp_href"]}).status_code == 202

    repository_viewer = {"role": "file.filerepository_viewer", "users": ["bob"]}
    assert call(alice, "POST", repository["pulp_href"] + "add_role/", repository_viewer).status_code == 201
    assert call(bob, "GET", content).json()["count"] == 12, "a version and its content follow the repository"
    assert call(bob, "GET", version["pulp_href"]).status_code == 200
    assert call(bob, "GET", "content/file/files/").json()["count"] == 12
    started = call(alice, "POST", repository["pulp_href"] + "sync/", {}).json()["task"]
    assert call(bob, "GET", started).status_code == 200, "a task follows its repository too"
    assert call(bob, "PATCH", started, {"state": "canceled"}).status_code == 403
    assert call(bob, "POST", repository["pulp_href"] + "sync/", {}).status_code == 403

    owner = {"role": "file.filerepository_owner", "users": ["bob"], "groups": []}
    assert call(alice, "POST", repository["pulp_href"] + "add_role/", owner).status_code == 201
    assert call(bob, "PATCH", repository["pulp_href"], {"name": "renamed"}).json()["name"] == "renamed"
    assert call(bob, "PATCH", started, {"state": "canceled"}).json()["state"] == "canceled", "its repository's owner"

    taken = call(alice, "POST", remote["pulp_href"] + "remove_role/", {"role": VIEWER, "users": ["bob"]})
    assert taken.status_code == 201
    assert call(bob, "GET", remote["pulp_href"]).status_code == 404
    absent = call(alice, "POST", remote["pulp_href"] + "remove_role/", {"role": VIEWER, "users": ["bob"]})
    assert absent.json() == {"users": ["The role is not given to user 'bob'."]}
    for body, field in [
        ({"role": "file.filerepository_owner", "users": ["bob"]}, "role"),
        ({"role": VIEWER, "users": ["nobody"]}, "users"),
        ({"role": VIEWER, "users": [], "groups": ["staff"]}, "groups"),
    ]:
        refused = call(alice, "POST", remote["pulp_href"] + "add_role/", body)
        assert refused.status_code == 400 and list(refused.json()) == [field], refused.json()


def test_admins_see_and_change_everything(alice: APIClient, admin: APIClient, server: str) -> None:
    remote, repository = remote_and_repository(alice, server + "good/PULP_MANIFEST")
    unowned = Remote.objects.create(name="from the command line", url=server + "good/PULP_MANIFEST")
    assert call(admin, "GET", "remotes/file/file/").json()["count"] == 2
    assert call(alice, "GET", "remotes/file/file/").json()["count"] == 1, "no one owns the command line's"
    assert call(alice, "GET", f"remotes/file/file/{unowned.pk}/").json() == NOT_FOUND
    assert call(admin, "PATCH", remote["pulp_href"], {"download_concurrency": 2}).status_code == 200
    owner = ["file.view_fileremote", "file.change_fileremote", "file.delete_fileremote", "file.manage_roles_fileremote"]
    assert call(admin, "GET", remote["pulp_href"] + "my_permissions/").json() == {"permissions": owner}
    assert call(alice, "GET", remote["pulp_href"] + "my_permissions/").json() == {"permissions": owner}

    dispatch_sync(Repository.objects.get(), Remote.objects.get(pk=unowned.pk))
    assert call(admin, "GET", "tasks/").json()["count"] == 1
    assert call(alice, "GET", "tasks/").json()["count"] == 1, "a task on her repository, which she sees"
    for method, href in [("GET", "artifacts/"), ("GET", "/api/v3/artifacts/"), ("POST", "orphans/cleanup/")]:
        assert call(alice, method, href, {}).status_code == 403, href
        assert call(admin, method, href, {}).status_code in (200, 202), href
    assert call(alice, "GET", "status/").status_code == 200, "status is for any user"
    assert call(admin, "DELETE", repository["pulp_href"]).status_code == 204


def test_an_artifact_named_by_a_user_is_a_400_naming_it(alice: APIClient, admin: APIClient) -> None:
    """Artifacts are admins' only: one named in a content create by anyone else does not exist for them, as
    one that does not exist at all (a 500 before: no user but an admin had a view of artifacts)."""
    artifact = Artifact.objects.create(sha256="0" * 64, size=0)
    href = f"/pulp/api/v3/artifacts/{artifact.pk}/"
    _, repository = remote_and_repository(alice, "http://127.0.0.1/PULP_MANIFEST")
    body = {"artifact": href, "relative_path": "empty", "repository": repository["pulp_href"]}
    refused = call(alice, "POST", "content/file/files/", body)
    assert (refused.status_code, refused.json()) == (400, {"artifact": ["Invalid hyperlink - Object does not exist."]})
    made = call(admin, "POST", "content/file/files/", {"artifact": href, "relative_path": "empty"})
    assert made.status_code == 201, made.content


def test_a_new_origin_clears_the_credentials(alice: APIClient, certificate: tuple[Path, Path]) -> None:
    cert, key = (path.read_text().strip() for path in certificate)  # as stored: DRF trims text
    credentials = {"username": "a", "password": "secret", "headers": [{"Authorization": "Bearer t"}],
                   "client_cert": cert, "client_key": key}
    remote = created(alice, "remotes/file/file/", {"name": "r", "url": "http://127.0.0.1:8000/a/PULP_MANIFEST",
                                                   "proxy_url": "http://127.0.0.1:3128", "proxy_username": "p",
                                                   "proxy_password": "proxy-secret", **credentials})
    stored = dict(username="a", password="secret", headers={"Authorization": "Bearer t"}, client_cert=cert,
                  client_key=key)

    def credentials_now() -> dict[str, Any]:
        return {name: getattr(Remote.objects.get(), name) for name in stored}

    for url in ("http://127.0.0.1:8000/b/PULP_MANIFEST", "HTTP://127.0.0.1:8000/c/PULP_MANIFEST"):
        assert call(alice, "PATCH", remote["pulp_href"], {"url": url}).status_code == 200
        assert credentials_now() == stored, f"{url}: the same origin keeps them"
    for url in ("http://127.0.0.2:8000/PULP_MANIFEST", "http://127.0.0.1:8001/PULP_MANIFEST",
                "https://127.0.0.1:8000/PULP_MANIFEST", "http://localhost:8000/PULP_MANIFEST"):
        moved = call(alice, "PATCH", remote["pulp_href"], {"url": url})
        assert moved.status_code == 200, moved.json()
        assert credentials_now() == dict.fromkeys(stored), f"{url}: another origin"
        assert {"name": "password", "is_set": False} in moved.json()["hidden_fields"]
        given = call(alice, "PATCH", remote["pulp_href"], {"url": "http://127.0.0.1:8000/PULP_MANIFEST", **credentials})
        assert given.status_code == 200, given.json()
        assert credentials_now() == stored, "given again with the new URL: kept"
    kept = Remote.objects.get()
    assert (kept.proxy_username, kept.proxy_password) == ("p", "proxy-secret"), "the proxy did not move"

    deprecated = f"/api/v3/remotes/{kept.pk}/"
    call(alice, "PATCH", deprecated, {"username": "a", "password": "secret"})
    put = call(alice, "PUT", deprecated, {"name": "r", "url": "http://127.0.0.9/PULP_MANIFEST"})
    assert put.status_code == 200 and Remote.objects.get().password is None, "the deprecated API's too"


def cleared_by(client: APIClient, start: dict[str, Any], change: dict[str, Any], secrets: dict[str, Any]) -> set[str]:
    """The secrets that an update with `change` clears on a remote made with `start`, `secrets` and an
    Authorization header, alike in both dialects; the same update giving them again keeps them all."""
    found = []
    for collection, headers in AUTHORIZATION.items():
        given = {**secrets, "headers": headers}
        found.append(_cleared(client, collection, start, given, change))
        assert _cleared(client, collection, start, given, {**change, **given}) == set(), "given again: kept"
    assert found[0] == found[1], f"{found}: the two dialects differ"
    return found[0]


def _cleared(client: APIClient, collection: str, start: dict[str, Any], given: dict[str, Any],
             change: dict[str, Any]) -> set[str]:
    """The fields of `given` that an update by `change` leaves empty on a remote made with `start` and them."""
    name = f"r{Remote.objects.count()}"
    remote = created(client, collection, {"name": name, **start, **given})
    updated = call(client, "PATCH", remote["pulp_href"], change)
    assert updated.status_code == 200, updated.json()
    stored = Remote.objects.get(name=name)
    return {field for field in given if getattr(stored, field) is None}


def test_a_new_proxy_clears_the_secrets_it_would_read(alice: APIClient, secrets: dict[str, Any]) -> None:
    for start, change, expected in [
        ({"url": HTTP, "proxy_url": PROXY}, {"proxy_url": OTHER_PROXY}, ORIGIN | PROXY_CREDENTIALS),
        ({"url": HTTP}, {"proxy_url": PROXY}, ORIGIN | PROXY_CREDENTIALS),
        ({"url": HTTPS, "proxy_url": PROXY}, {"proxy_url": OTHER_PROXY}, PROXY_CREDENTIALS),
        ({"url": HTTPS, "proxy_url": PROXY, "tls_validation": False}, {"proxy_url": OTHER_PROXY},
         ORIGIN | PROXY_CREDENTIALS),
        ({"url": HTTP, "proxy_url": PROXY}, {"proxy_url": PROXY + "/"}, set()),
        ({"url": HTTP, "proxy_url": PROXY}, {"proxy_url": None}, set()),
    ]:
        assert cleared_by(alice, start, change, secrets) == expected, (start, change)


def test_tls_validation_turned_off_clears_what_a_man_in_the_middle_would_read(
    alice: APIClient, secrets: dict[str, Any]
) -> None:
    for start, change, expected in [
        ({"url": HTTPS, "proxy_url": PROXY}, {"tls_validation": False}, ORIGIN),
        ({"url": HTTPS, "proxy_url": HTTPS_PROXY}, {"tls_validation": False}, ORIGIN | PROXY_CREDENTIALS),
        ({"url": HTTP, "proxy_url": PROXY}, {"tls_validation": False}, set()),
        ({"url": HTTPS, "tls_validation": False}, {"tls_validation": True}, set()),
    ]:
        assert cleared_by(alice, start, change, secrets) == expected, (start, change)


def test_another_ca_cert_clears_what_its_holder_could_read(alice: APIClient, secrets: dict[str, Any]) -> None:
    ca = secrets["client_cert"]
    for start, change, expected in [
        ({"url": HTTPS}, {"ca_cert": ca}, ORIGIN),
        ({"url": HTTPS, "ca_cert": ca}, {"ca_cert": ""}, ORIGIN),
        ({"url": HTTPS, "proxy_url": HTTPS_PROXY, "ca_cert": ca}, {"ca_cert": ""}, ORIGIN | PROXY_CREDENTIALS),
        ({"url": HTTPS, "ca_cert": ca}, {"ca_cert": ca}, set()),
        ({"url": HTTPS, "ca_cert": ca, "tls_validation": False}, {"ca_cert": ""}, set()),
    ]:
        assert cleared_by(alice, start, change, secrets) == expected, (start, change)


def test_header_values_are_shown_to_owners_and_secret_ones_to_no_one(
    alice: APIClient, bob: APIClient, admin: APIClient
) -> None:
    headers = {"Authorization": "Bearer t", "proxy-authorization": "Basic cA==", "COOKIE": "s=1", "X-Trace": "abc"}
    remote = created(alice, "remotes/file/file/", {"name": "r", "url": HTTP,
                                                   "headers": [{name: value} for name, value in headers.items()]})
    deprecated = f"/api/v3/remotes/{remote['pulp_href'].split('/')[-2]}/"
    assert call(alice, "POST", remote["pulp_href"] + "add_role/", {"role": VIEWER, "users": ["bob"]}).status_code == 201

    for client, trace in [(alice, "abc"), (admin, "abc"), (bob, None)]:
        shown = {"Authorization": None, "proxy-authorization": None, "COOKIE": None, "X-Trace": trace}
        assert call(client, "GET", remote["pulp_href"]).json()["headers"] == [{n: v} for n, v in shown.items()]
        assert call(client, "GET", "remotes/file/file/").json()["results"][0]["headers"] == [
            {n: v} for n, v in shown.items()
        ]
        assert call(client, "GET", deprecated).json()["headers"] == shown
        assert call(client, "GET", "/api/v3/remotes/").json()["results"][0]["headers"] == shown
    assert Remote.objects.get().headers == headers, "stored, and sent, as given"

    for href in (remote["pulp_href"], deprecated):
        shown_back = call(alice, "PATCH", href, {"headers": call(alice, "GET", href).json()["headers"]})
        assert shown_back.status_code == 400, shown_back.json()
        assert "a value shown as null is hidden" in shown_back.json()["headers"][0], "what was read, sent back"
    assert Remote.objects.get().headers == headers, "nothing lost"


def test_a_header_given_by_reference_is_never_shown(admin: APIClient, server: str) -> None:
    given = invoke("sync", server + "good/PULP_MANIFEST", "--header", "X-Trace: abc", "--header-env", "X-Api-Key=KEY",
                   env={"KEY": "k3y"})
    assert given.exit_code == 0, given.output
    remote = Remote.objects.get()
    assert remote.headers == {"X-Trace": "abc", "X-Api-Key": "k3y"}
    pulp, deprecated = f"remotes/file/file/{remote.pk}/", f"/api/v3/remotes/{remote.pk}/"
    assert call(admin, "GET", pulp).json()["headers"] == [{"X-Trace": "abc"}, {"X-Api-Key": None}]
    assert call(admin, "GET", deprecated).json()["headers"] == {"X-Trace": "abc", "X-Api-Key": None}

    in_clear = invoke("sync", server + "good/PULP_MANIFEST", "--header", "X-Api-Key: public")
    assert in_clear.exit_code == 0, in_clear.output
    assert call(admin, "GET", pulp).json()["headers"] == [{"X-Api-Key": "public"}], "given in clear: shown"
    assert call(admin, "PATCH", deprecated, {"headers": {"X-Api-Key": "k3y"}}).json()["headers"] == {"X-Api-Key": "k3y"}


def test_a_taken_name_is_refused_alike_whoever_holds_it(
    alice: APIClient, bob: APIClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The answer for a name held by an object the user may not see is the answer for one they see, word
    for word, also when that object is saved between the name's check and the save (a race)."""
    for name in ("r", "alices"):
        remote = created(alice, "remotes/file/file/", {"name": name, "url": HTTP})
        created(alice, "repositories/file/file/", {"name": name, "remote": remote["pulp_href"]})
    created(bob, "remotes/file/file/", {"name": "bobs", "url": HTTP})
    created(bob, "repositories/file/file/", {"name": "bobs"})

    def answers(client: APIClient, own: str) -> list[tuple[int, Any]]:
        """Every way to ask for the name "r": create, and rename the user's own object named `own`."""
        asked = []
        for collection, deprecated, body in [("remotes/file/file/", "/api/v3/remotes/", {"name": "r", "url": HTTP}),
                                             ("repositories/file/file/", "/api/v3/repositories/", {"name": "r"})]:
            mine = call(client, "GET", f"{collection}?name={own}").json()["results"][0]["pulp_href"]
            asked += [call(client, "POST", collection, body), call(client, "POST", deprecated, body),
                      call(client, "PATCH", mine, {"name": "r"}), call(client, "PUT", mine, body)]
        return [(answer.status_code, answer.json()) for answer in asked]

    expected = [(400, TAKEN[kind]) for kind in ("remotes", "repositories") for _ in range(4)]
    assert answers(alice, "alices") == expected, "hers: she sees it"
    assert answers(bob, "bobs") == expected, "not his: the same words, nothing more"
    monkeypatch.setattr(UniqueValidator, "__call__", lambda self, value, field: None)  # saved after the check
    assert answers(bob, "bobs") == expected, "and when the index refuses it"
    assert sorted(Remote.objects.values_list("name", flat=True)) == ["alices", "bobs", "r"]
    assert sorted(Repository.objects.values_list("name", flat=True)) == ["alices", "bobs", "r"]


@pytest.mark.parametrize("url", ["http://169.254.169.254/latest/meta-data/", "http://[fe80::1]/PULP_MANIFEST"])
def test_addresses_the_policy_refuses_are_400s(alice: APIClient, url: str) -> None:
    host = url.split("/")[2].strip("[]")
    message = f"not fetched: {host} is denied by the remote-address policy ({url})"
    for collection in ("remotes/file/file/", "/api/v3/remotes/"):
        for body, field in [({"url": url}, "url"), ({"url": "http://127.0.0.1/PULP_MANIFEST", "proxy_url": url},
                                                     "proxy_url")]:
            refused = call(alice, "POST", collection, {"name": "r", **body})
            assert (refused.status_code, refused.json()) == (400, {field: [message]}), collection
    remote = created(alice, "remotes/file/file/", {"name": "r", "url": "http://127.0.0.1/PULP_MANIFEST"})
    assert call(alice, "PATCH", remote["pulp_href"], {"url": url}).status_code == 400
    assert not Remote.objects.filter(url=url).exists()


@pytest.mark.parametrize("userinfo", ["user:secret@", "user@"])
def test_credentials_in_a_url_are_refused_everywhere(alice: APIClient, userinfo: str) -> None:
    url, proxy_url = f"http://{userinfo}127.0.0.1/PULP_MANIFEST", f"http://{userinfo}127.0.0.1:3128"
    expected = {
        "url": ["credentials do not go in the URL (user:password@ or user@): give them in username and password"],
        "proxy_url": ["credentials do not go in the URL (user:password@ or user@): give them in proxy_username and "
                      "proxy_password"],
    }
    for collection in ("remotes/file/file/", "/api/v3/remotes/"):
        refused = call(alice, "POST", collection, {"name": "r", "url": url, "proxy_url": proxy_url})
        assert (refused.status_code, refused.json()) == (400, expected), collection
    with pytest.raises(ValidationError) as raised:
        Remote(name="r", url=url, proxy_url=proxy_url).full_clean()  # what the command line calls
    assert raised.value.message_dict == expected


def test_certificates_and_keys_are_pem_text(alice: APIClient, certificate: tuple[Path, Path], tmp_path: Path) -> None:
    cert, key = certificate
    remote = created(alice, "remotes/file/file/", {"name": "r", "url": "https://127.0.0.1/PULP_MANIFEST",
                                                   "ca_cert": cert.read_text() * 2, "client_cert": cert.read_text(),
                                                   "client_key": key.read_text()})
    assert remote["ca_cert"] == (cert.read_text() * 2).strip() and "client_key" not in remote
    answers = [call(alice, "PATCH", remote["pulp_href"], {"ca_cert": str(path)})
               for path in (cert, tmp_path / "absent.pem", Path("/etc/passwd"), tmp_path)]
    assert {(answer.status_code, answer.content) for answer in answers} == {
        (400, b'{"ca_cert":["' + NOT_PEM.encode() + b'"]}')
    }, "the same answer whether the file exists or not"
    not_base64 = cert.read_text().replace("\n", "\n%%", 1)
    for fields, field, message in [
        ({"client_cert": "/etc/ssl/certs/ca-certificates.crt"}, "client_cert", NOT_PEM),
        ({"ca_cert": not_base64}, "ca_cert", NOT_PEM),
        ({"client_cert": cert.read_text() + key.read_text()}, "client_cert",
         "holds a PRIVATE KEY block: only certificates go here; a key goes in client_key, which is never shown"),
        ({"client_key": str(key)}, "client_key",
         "not PEM text: give the key itself (-----BEGIN PRIVATE KEY----- ...), not a path"),
        ({"client_key": cert.read_text()}, "client_key",
         "not PEM text: give the key itself (-----BEGIN PRIVATE KEY----- ...), not a path"),
    ]:
        for href in (remote["pulp_href"], f"/api/v3/remotes/{remote['pulp_href'].split('/')[-2]}/"):
            refused = call(alice, "PATCH", href, fields)
            assert (refused.status_code, refused.json()) == (400, {field: [message]}), (href, fields)
    assert call(alice, "PATCH", remote["pulp_href"], {"ca_cert": ""}).json()["ca_cert"] is None


def test_a_page_holds_at_most_1000(admin: APIClient, db: Path) -> None:
    Remote.objects.bulk_create(Remote(name=f"r{n}", url="http://127.0.0.1/PULP_MANIFEST") for n in range(1005))
    for collection in ("remotes/file/file/", "/api/v3/remotes/"):
        assert len(call(admin, "GET", collection).json()["results"]) == 100, "Pulp's default page"
        page = call(admin, "GET", collection + "?limit=100000").json()
        assert (page["count"], len(page["results"])) == (1005, 1000)
        assert "limit=1000" in page["next"]
        far = call(admin, "GET", collection + f"?offset={10**30}")
        assert (far.status_code, far.json()["results"]) == (200, []), "past the end, however far"


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (b"[" * 100_000, "JSON parse error - nested too deeply"),
        (b'{"name": "\xff\xfe"}', "JSON parse error - 'utf-8' codec can't decode byte 0xff in position 10"),
        (b'{"name": "\\ud800"}', "JSON parse error - a string holds a lone surrogate (\\ud800 to \\udfff)"),
    ],
)
def test_a_body_that_does_not_parse_is_a_400(alice: APIClient, body: bytes, detail: str) -> None:
    for href in ("/pulp/api/v3/remotes/file/file/", "/api/v3/repositories/"):
        answer = alice.post(href, body, content_type="application/json")
        assert answer.status_code == 400, (href, answer.content)
        assert answer.json()["detail"].startswith(detail)
    assert not Remote.objects.exists() and not Repository.objects.exists()
