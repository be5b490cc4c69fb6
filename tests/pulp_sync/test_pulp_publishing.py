"""The Pulp dialect's publications, distributions and content app, uploads, content changes, version delete
and repair, and the operations declared but not served: in this process, on conftest's sqlite database
(Django's test client). test_pulp_cli_file_group.py drives the same with pulp-cli itself.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from pulp_sync.content.store import artifact_store
from pulp_sync.models import Artifact, Repository
from tests.pulp_sync.test_api_users import client_of

API = "/pulp/api/v3/"
ALPHA = hashlib.sha256(b"alpha\n").hexdigest()


@pytest.fixture
def admin(db: Path) -> APIClient:
    return client_of("admin", admin=True)


def call(client: APIClient, method: str, href: str, body: Any = None, **options: Any) -> Any:
    url = href if href.startswith("/") else API + href
    return getattr(client, method.lower())(url, body, **({"format": "json"} | options))


def ok(answer: Any, code: int = 200) -> Any:
    assert answer.status_code == code, answer.content
    return answer.json() if answer.content else None


def upload(client: APIClient, relative_path: str, body: bytes, repository: str | None = None) -> Any:
    """pulp-cli's `content upload`: the file as multipart/form-data."""
    form = {"file": SimpleUploadedFile("f", body), "relative_path": relative_path}
    return call(client, "POST", "content/file/files/", form | ({"repository": repository} if repository else {}),
                format="multipart")


def repository_with_versions(client: APIClient, name: str = "repo") -> dict[str, Any]:
    """A repository with two versions: 1 holds a.txt, 2 holds a.txt and b/c.txt."""
    repository = ok(call(client, "POST", "repositories/file/file/", {"name": name}), 201)
    ok(upload(client, "a.txt", b"alpha\n", repository["pulp_href"]), 201)
    ok(upload(client, "b/c.txt", b"gamma\n", repository["pulp_href"]), 201)
    return ok(call(client, "GET", repository["pulp_href"]))


def fetched(client: APIClient, url: str) -> Any:
    return client.get(url.removeprefix("http://localhost"))


def test_an_upload_makes_a_version_and_a_distribution_serves_it(admin: APIClient) -> None:
    repository = repository_with_versions(admin)
    version_1 = repository["versions_href"] + "1/"
    assert repository["latest_version_href"] == repository["versions_href"] + "2/"
    publication = ok(call(admin, "POST", "publications/file/file/", {"repository_version": version_1}), 201)
    assert (publication["repository"], publication["manifest"]) == (repository["pulp_href"], "PULP_MANIFEST")
    distribution = ok(call(admin, "POST", "distributions/file/file/",
                           {"name": "d", "base_path": "a/b", "publication": publication["pulp_href"]}), 201)
    assert distribution["base_url"] == "http://localhost/pulp/content/a/b/"
    assert distribution["pulp_labels"] == {} and distribution["content_guard"] is None

    manifest = fetched(admin, distribution["base_url"] + "PULP_MANIFEST")
    assert manifest.status_code == 200
    assert manifest.content.decode() == f"a.txt,{ALPHA},6\n"
    served = fetched(APIClient(), distribution["base_url"] + "a.txt")
    assert (served.status_code, b"".join(served.streaming_content)) == (200, b"alpha\n"), "open to anyone, as Pulp's"
    assert APIClient().head("/pulp/content/a/b/a.txt").status_code == 200
    absent = fetched(admin, distribution["base_url"] + "b/c.txt")
    assert absent.status_code == 404 and "serves nothing at 'b/c.txt'" in absent.json()["detail"], "not in version 1"
    assert fetched(admin, "/pulp/content/nowhere/a.txt").status_code == 404

    latest = ok(call(admin, "PATCH", distribution["pulp_href"], {"repository": repository["pulp_href"],
                                                                 "publication": None}))
    assert latest["publication"] is None
    assert b"".join(fetched(admin, distribution["base_url"] + "b/c.txt").streaming_content) == b"gamma\n"
    assert ok(call(admin, "GET", publication["pulp_href"]))["distributions"] == []


def test_base_paths_are_unique_and_never_nested(admin: APIClient) -> None:
    ok(call(admin, "POST", "distributions/file/file/", {"name": "one", "base_path": "a/b"}), 201)
    for base_path, message in [
        ("a", "another distribution's base path"),
        ("a/b/c", "another distribution's base path"),
        ("a/b", "distribution with this base path already exists."),
        ("../x", "base_path has an empty, '.' or '..' segment"),
    ]:
        refused = call(admin, "POST", "distributions/file/file/", {"name": "two", "base_path": base_path})
        assert refused.status_code == 400 and message in str(refused.json()["base_path"]), refused.json()
    guarded = call(admin, "POST", "distributions/file/file/", {"name": "two", "base_path": "z", "content_guard": "x"})
    assert "content guards are not supported" in str(guarded.json())
    labels = {"name": "two", "base_path": "z", "pulp_labels": {"a": "b"}}
    labelled = call(admin, "POST", "distributions/file/file/", labels)
    assert labelled.json() == {"pulp_labels": ["labels are not supported by pulp-sync"]}


def test_deleting_a_version_in_use_is_refused(admin: APIClient) -> None:
    repository = repository_with_versions(admin)
    version_1, version_2 = repository["versions_href"] + "1/", repository["versions_href"] + "2/"
    latest = call(admin, "DELETE", version_2)
    assert latest.status_code == 400 and "is the latest of repository repo" in latest.json()["detail"]
    publication = ok(call(admin, "POST", "publications/file/file/", {"repository_version": version_1}), 201)
    ok(call(admin, "POST", "distributions/file/file/",
            {"name": "d", "base_path": "d", "publication": publication["pulp_href"]}), 201)
    served = call(admin, "DELETE", version_1)
    assert served.status_code == 400 and "distribution 'd' serves a publication" in served.json()["detail"]
    assert "distribution 'd' serves this publication" in str(call(admin, "DELETE", publication["pulp_href"]).json())

    [distribution] = ok(call(admin, "GET", "distributions/file/file/?name=d"))["results"]
    ok(call(admin, "DELETE", distribution["pulp_href"]), 204)
    ok(call(admin, "DELETE", version_1), 204)
    assert call(admin, "GET", publication["pulp_href"]).status_code == 404, "deleted with its version"
    versions = ok(call(admin, "GET", repository["versions_href"]))["results"]
    assert [version["number"] for version in versions] == [2]
    assert versions[0]["content_summary"]["added"]["file.file"]["count"] == 2, "against no version before it"


def test_repair_marks_lost_and_damaged_files_missing(admin: APIClient) -> None:
    repository = repository_with_versions(admin)
    store = artifact_store()
    alpha, gamma = (hashlib.sha256(body).hexdigest() for body in (b"alpha\n", b"gamma\n"))
    store.path_for(alpha).write_bytes(b"alphA\n")  # the same size: only the digest tells
    repaired = ok(call(admin, "POST", repository["versions_href"] + "2/repair/", {}), 202)
    task = ok(call(admin, "GET", repaired["task"]))
    assert (task["state"], task["name"]) == ("completed", "repair")
    assert task["result"] == {"checked": 2, "missing": [], "corrupt": [alpha]}
    assert [report["done"] for report in task["progress_reports"]] == [0, 1]
    assert Artifact.objects.get(sha256=alpha).missing and not store.path_for(alpha).exists()
    assert not Artifact.objects.get(sha256=gamma).missing

    store.path_for(gamma).unlink()
    sizes_only = ok(call(admin, "GET", ok(call(admin, "POST", repository["versions_href"] + "2/repair/",
                                               {"verify_checksums": False}), 202)["task"]))
    assert sizes_only["result"]["missing"] == [alpha, gamma]
    ok(call(admin, "POST", "distributions/file/file/", {"name": "d", "base_path": "d",
                                                       "repository": repository["pulp_href"]}), 201)
    lost = fetched(admin, "/pulp/content/d/a.txt")
    assert lost.status_code == 404 and "missing from the artifact store" in lost.json()["detail"]
    ok(upload(admin, "again.txt", b"alpha\n"), 201)
    assert not Artifact.objects.get(sha256=alpha).missing, "an upload of the same bytes puts them back"
    assert b"".join(fetched(admin, "/pulp/content/d/a.txt").streaming_content) == b"alpha\n"


def test_modify_adds_replaces_and_removes_content(admin: APIClient) -> None:
    repository = repository_with_versions(admin)
    other = ok(upload(admin, "a.txt", b"another alpha\n"), 201)
    assert ok(upload(admin, "a.txt", b"another alpha\n"), 201) == other, "the same path and bytes: the same unit"
    modify, adding = repository["pulp_href"] + "modify/", {"add_content_units": [other["pulp_href"]]}
    task = ok(call(admin, "GET", ok(call(admin, "POST", modify, adding), 202)["task"]))
    assert (task["name"], task["state"], task["created_resources"]) == (
        "modify", "completed", [repository["versions_href"] + "3/"])
    held = ok(call(admin, "GET", f"content/file/files/?repository_version={repository['versions_href']}3/"))["results"]
    assert sorted((unit["relative_path"], unit["sha256"] == other["sha256"]) for unit in held) == [
        ("a.txt", True), ("b/c.txt", False)], "an added unit replaces the one at its path"

    again = ok(call(admin, "GET", ok(call(admin, "POST", modify, adding), 202)["task"]))
    assert (again["state"], again["created_resources"]) == ("completed", []), "nothing changed: no version"
    emptied = ok(call(admin, "POST", modify, {"remove_content_units": ["*"]}), 202)
    assert ok(call(admin, "GET", emptied["task"]))["created_resources"] == [repository["versions_href"] + "4/"]
    unknown = call(admin, "POST", modify, {"add_content_units": ["/pulp/api/v3/content/file/files/999/"]})
    assert unknown.status_code == 400 and "no file content has the href" in str(unknown.json())


def test_owners_alone_change_and_distribute_a_repository(admin: APIClient) -> None:
    repository = repository_with_versions(admin)
    bob = client_of("bob")
    ok(call(admin, "POST", repository["pulp_href"] + "add_role/",
            {"role": "file.filerepository_viewer", "users": ["bob"], "groups": []}), 201)
    assert call(bob, "GET", repository["pulp_href"]).status_code == 200

    refused = upload(bob, "x.txt", b"x", repository["pulp_href"])
    assert refused.json() == {"repository": ["You may change only the repositories you own."]}
    assert upload(bob, "x.txt", b"x").json() == {"repository": ["Name a repository you own to add the content to."]}
    publication = ok(call(bob, "POST", "publications/file/file/", {"repository": repository["pulp_href"]}), 201)
    distributing = call(bob, "POST", "distributions/file/file/",
                        {"name": "d", "base_path": "d", "publication": publication["pulp_href"]})
    assert distributing.status_code == 400 and "only the repositories you own" in str(distributing.json())
    assert call(bob, "DELETE", repository["versions_href"] + "1/").status_code == 403
    assert call(bob, "POST", repository["versions_href"] + "1/repair/", {}).status_code == 403
    assert call(bob, "POST", repository["pulp_href"] + "modify/", {}).status_code == 403

    carol = client_of("carol")
    assert call(carol, "GET", publication["pulp_href"]).status_code == 404, "bob's publication"
    assert ok(call(carol, "GET", "publications/file/file/"))["count"] == 0
    assert call(carol, "POST", "publications/file/file/", {"repository": repository["pulp_href"]}).status_code == 400
    permissions = ["file.view_filepublication", "file.delete_filepublication", "file.manage_roles_filepublication"]
    assert ok(call(bob, "GET", publication["pulp_href"] + "my_permissions/")) == {"permissions": permissions}


def test_a_viewer_cannot_copy_her_content_into_his_repository(db: Path) -> None:
    alice, bob = client_of("alice"), client_of("bob")
    repository = repository_with_versions(alice)
    ok(call(alice, "POST", repository["pulp_href"] + "add_role/",
            {"role": "file.filerepository_viewer", "users": ["bob"], "groups": []}), 201)
    [hers] = ok(call(bob, "GET", "content/file/files/?relative_path=a.txt"))["results"]  # he sees it
    his = ok(call(bob, "POST", "repositories/file/file/", {"name": "his"}), 201)
    own = ok(upload(bob, "own.txt", b"own\n", his["pulp_href"]), 201)
    ok(call(bob, "POST", "distributions/file/file/", {"name": "d", "base_path": "d", "repository": his["pulp_href"]}),
       201)

    adding = {"add_content_units": [hers["pulp_href"], own["pulp_href"]]}
    copied = call(bob, "POST", his["pulp_href"] + "modify/", adding)
    assert (copied.status_code, list(copied.json())) == (400, ["add_content_units"])
    assert copied.json()["add_content_units"][0].endswith("Not yours to add: " + hers["pulp_href"])
    assert Repository.objects.get(name="his").latest_version().number == 1  # type: ignore[union-attr]
    assert fetched(APIClient(), "/pulp/content/d/a.txt").status_code == 404, "his distribution serves none of hers"
    by_artifact = {"artifact": f"/pulp/api/v3/artifacts/{Artifact.objects.get(sha256=ALPHA).pk}/",
                   "relative_path": "a.txt", "repository": his["pulp_href"]}
    assert call(bob, "POST", "content/file/files/", by_artifact).json() == {
        "artifact": ["Invalid hyperlink - Object does not exist."]}, "nor by her artifact: artifacts are admins'"

    mine = ok(call(bob, "POST", "repositories/file/file/", {"name": "mine"}), 201)
    task = ok(call(bob, "GET", ok(call(bob, "POST", mine["pulp_href"] + "modify/",
                                       {"add_content_units": [own["pulp_href"]]}), 202)["task"]))
    assert task["state"] == "completed", "what he uploaded is his to add anywhere he owns"
    theirs = ok(call(alice, "GET", ok(call(alice, "POST", repository["pulp_href"] + "modify/",
                                           {"add_content_units": [hers["pulp_href"]]}), 202)["task"]))
    assert theirs["state"] == "completed", "an owner adds her repository's content"


def test_operations_not_served_are_declared_and_say_why(admin: APIClient) -> None:
    document = APIClient().get(API + "docs/api.json").json()
    assert document["paths"][API + "acs/file/file/"]["post"]["operationId"] == "acs_file_file_create"
    assert "{file_file_remote_href}set_label/" in document["paths"]
    answer = call(admin, "POST", "acs/file/file/", {"name": "a", "remote": "x", "paths": []})
    assert answer.status_code == 501 and answer.json()["detail"].startswith("alternate content sources (ACS)")
    assert call(admin, "GET", "acs/file/file/?name=a").status_code == 501
    remote = ok(call(admin, "POST", "remotes/file/file/", {"name": "r", "url": "http://127.0.0.1/PULP_MANIFEST"}), 201)
    assert remote["pulp_labels"] == {}
    labelled = call(admin, "POST", remote["pulp_href"] + "set_label/", {"key": "a", "value": "b"})
    assert (labelled.status_code, labelled.json()) == (501, {"detail": "labels are not supported by pulp-sync"})
    assert call(APIClient(), "POST", API + "uploads/", {"size": 3}).status_code == 401, "a user first, as everywhere"
    assert call(admin, "DELETE", "acs/file/file/").status_code == 405


def test_bad_uploads_are_one_line_each(admin: APIClient) -> None:
    repository = ok(call(admin, "POST", "repositories/file/file/", {"name": "r"}), 201)
    for body, expected in [
        ({"relative_path": "../a"}, {"relative_path": ["relative_path has an empty, '.' or '..' segment"]}),
        ({"relative_path": "a"}, {"non_field_errors": ["Give either a file or an artifact."]}),
        ({"relative_path": "a", "file_url": "http://x/"},
         {"file_url": ["content from a URL is not supported: sync a remote, or upload the file"]}),
        ({"relative_path": "a", "upload": "/pulp/api/v3/uploads/1/"},
         {"upload": ["chunked uploads are not supported: give the file itself"]}),
    ]:
        assert call(admin, "POST", "content/file/files/", body).json() == expected
    assert Repository.objects.get(name="r").latest_version() is None and repository["latest_version_href"] is None
