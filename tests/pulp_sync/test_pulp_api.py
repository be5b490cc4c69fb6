"""The Pulp 3 dialect's shapes, in this process (Django's test client on conftest's sqlite database):
the OpenAPI document pulp-glue reads, tasks as Pulp shows them, cancel, remotes, versions, orphans,
status. Syncs run inline, or on real RQ workers (subprocesses) with the real Redis, as in test_tasks.
test_pulp_cli.py drives the same API with pulp-cli itself.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from pulp_glue.common import oas
from redis import Redis
from rest_framework.test import APIClient
from rq.job import Job, JobStatus

from pulp_sync.api.auth import save_user
from pulp_sync.api.pulp.schema import APP_VERSIONS
from pulp_sync.api.pulp.workers import worker_href
from pulp_sync.content.store import artifact_store
from pulp_sync.models import Remote, Repository, RepositoryVersion, Task, TaskState
from pulp_sync.tasking.tasks import dispatch_sync
from tests.pulp_sync.sync.test_pipeline import assert_store_is_sound
from tests.pulp_sync.tasking.test_tasks import (  # noqa: F401 - fixtures, used by name
    Workers,
    big_tree,
    fast_server,
    finished,
    queue,
    redis,
    slow_server,
    sync_source,
    workers,
)

API = "/pulp/api/v3/"
CALLED_BY_PULP_CLI = {
    "status_read",
    "remotes_file_file_list",
    "remotes_file_file_create",
    "remotes_file_file_read",
    "remotes_file_file_partial_update",
    "remotes_file_file_delete",
    "repositories_file_file_list",
    "repositories_file_file_create",
    "repositories_file_file_read",
    "repositories_file_file_partial_update",
    "repositories_file_file_delete",
    "repositories_file_file_sync",
    "repositories_file_file_versions_list",
    "repositories_file_file_versions_read",
    "content_file_files_list",
    "content_file_files_read",
    "artifacts_list",
    "tasks_list",
    "tasks_read",
    "tasks_cancel",
    "orphans_cleanup_cleanup",
}
"""The operations pulp-glue's contexts call for the file plugin's commands this API serves."""
TASK_FIELDS = [
    "pulp_href",
    "pulp_created",
    "state",
    "name",
    "started_at",
    "finished_at",
    "error",
    "worker",
    "progress_reports",
    "created_resources",
    "reserved_resources_record",
    "result",
]


@pytest.fixture
def client(db: Path) -> APIClient:
    """An admin API user's client on a fresh database: it sees the objects the tests make in the
    database (no one owns them) and may clean up orphans (test_api_users.py: other users)."""
    user, _ = save_user("tester", None, admin=True)
    client = APIClient(HTTP_HOST="localhost")
    client.force_authenticate(user)
    return client


def call(client: APIClient, method: str, href: str, body: Any = None) -> Any:
    """`href` is an href, or a path under /pulp/api/v3/; the response, its JSON in `.json()`."""
    url = href if href.startswith("/") else API + href
    return getattr(client, method.lower())(url, body, format="json")


def created(client: APIClient, collection: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = call(client, "POST", collection, body)
    assert answer.status_code == 201, answer.content
    return answer.json()


def test_the_document_is_what_pulp_glue_reads(client: APIClient) -> None:
    answer = APIClient(HTTP_HOST="localhost").get(API + "docs/api.json")
    assert answer.status_code == 200, "open to anyone, as the rest of the API's document"
    document = json.loads(answer.content)
    spec = oas.OpenAPISpec.model_validate(document)  # pulp-glue's own model of a document
    assert CALLED_BY_PULP_CLI <= set(spec.operations)
    assert document["info"]["x-pulp-app-versions"] == APP_VERSIONS
    assert spec.operations["remotes_file_file_read"] == ("get", "{file_file_remote_href}")
    assert spec.operations["repositories_file_file_sync"] == ("post", "{file_file_repository_href}sync/")
    assert spec.operations["repositories_file_file_versions_list"] == ("get", "{file_file_repository_href}versions/")
    assert spec.operations["tasks_cancel"] == ("patch", "{task_href}")
    assert spec.operations["tasks_list"] == ("get", API + "tasks/")
    for prefix, href in (("remotes", "remote"), ("repositories", "repository")):
        for method, role_action in (("post", "add_role"), ("post", "remove_role"), ("get", "list_roles"),
                                    ("get", "my_permissions")):
            operation = spec.operations[f"{prefix}_file_file_{role_action}"]
            assert operation == (method, f"{{file_file_{href}_href}}{role_action}/"), "Pulp's role endpoints"

    sent_by_task_list = {"limit", "offset", "fields", "exclude_fields", "state__in", "reserved_resources__in"}
    declared = {parameter["name"] for parameter in document["paths"][API + "tasks/"]["get"]["parameters"]}
    assert sent_by_task_list | {"exclusive_resources__in", "shared_resources__in"} <= declared
    remote = document["components"]["schemas"]["FileRemoteRequest"]
    assert remote["required"] == ["name", "url"], "a request needs no read-only field"
    assert all(remote["properties"][name]["writeOnly"] for name in ("password", "proxy_password", "client_key"))
    assert {"basicAuth", "tokenAuth"} <= set(document["components"]["securitySchemes"])

    deprecated = json.loads(APIClient(HTTP_HOST="localhost").get("/api/v3/docs/api.json").content)
    assert all(path.startswith("/api/v3/") for path in deprecated["paths"]), "each document its own API"


@pytest.mark.parametrize(("collection", "declared"), [
    (API + "remotes/file/file/", "name=a&limit=10&offset=0&fields=name&exclude_fields=url"),
    ("/api/v3/remotes/", "limit=10&offset=0"),
], ids=["pulp", "deprecated"])
def test_a_query_parameter_no_operation_declares_is_a_400_naming_it(
    client: APIClient, collection: str, declared: str
) -> None:
    """A mistyped filter, or one this API lacks, answered 200 with the whole list: a cleanup script with a typo
    acted on every object. Now each is refused, naming it, on every operation of both dialects (as Pulp's
    "Invalid Filter"); what an operation declares in the OpenAPI document still works."""
    first = created(client, collection, {"name": "a", "url": "http://127.0.0.1/a/PULP_MANIFEST"})
    created(client, collection, {"name": "b", "url": "http://127.0.0.1/b/PULP_MANIFEST"})
    for query in ("name__regex=x", "bogus=1", "ordering=-name", "format=json", "limit=1&nmae=b"):
        name = query.split("&")[-1].split("=")[0]
        for method, href in (("GET", collection), ("GET", first["pulp_href"]), ("DELETE", first["pulp_href"])):
            answer = call(client, method, f"{href}?{query}")
            assert answer.status_code == 400, (method, href, query, answer.content)
            assert name in answer.json(), answer.json()  # with `limit` where it is not declared: a detail's
            assert answer.json()[name][0].startswith("not a query parameter of this operation; "), answer.json()
    assert call(client, "GET", collection).json()["count"] == 2, "nothing was deleted"
    listed = call(client, "GET", f"{collection}?{declared}")
    assert listed.status_code == 200, listed.content
    assert len(listed.json()["results"]) == (1 if "name=a" in declared else 2)
    refused = call(client, "POST", f"{collection}?bogus=1", {"name": "c", "url": "http://127.0.0.1/PULP_MANIFEST"})
    assert refused.status_code == 400 and Remote.objects.count() == 2
    document = APIClient(HTTP_HOST="localhost").get(collection.split("remotes/")[0] + "docs/api.json?lang=de")
    assert (document.status_code, list(document.json())) == (400, ["lang"]), "the document takes none either"


def test_a_task_in_pulps_shape(client: APIClient) -> None:
    repository = Repository.objects.create(name="repo")
    remote = Remote.objects.create(name="remote", url="http://127.0.0.1/PULP_MANIFEST")
    version = RepositoryVersion.objects.create(repository=repository, number=1)
    completed = Task.objects.create(
        name="sync", state=TaskState.COMPLETED, repository=repository, remote=remote, created_version=version,
        artifacts_total=3, artifacts_done=3, bytes_total=30, bytes_done=30, worker="host.1.ab", report={"version": 1},
    )
    failed = Task.objects.create(name="sync", state=TaskState.FAILED, error="could not fetch the manifest: HTTP 404")

    shown = call(client, "GET", f"tasks/{completed.pk}/").json()
    assert list(shown) == TASK_FIELDS
    assert shown["pulp_href"] == f"/pulp/api/v3/tasks/{completed.pk}/"
    assert (shown["state"], shown["error"]) == ("completed", None)
    assert shown["worker"] == worker_href("host.1.ab"), "the href of the RQ worker that ran it"
    in_request = Task.objects.create(name="orphans.cleanup", state=TaskState.COMPLETED, worker="host:123")
    assert call(client, "GET", f"tasks/{in_request.pk}/").json()["worker"] is None, "run in the API's own process"
    assert shown["result"] == {"version": 1}, "pulp-sync's report of the task"
    assert shown["created_resources"] == [f"/pulp/api/v3/repositories/file/file/{repository.pk}/versions/1/"]
    assert shown["reserved_resources_record"] == [
        f"/pulp/api/v3/repositories/file/file/{repository.pk}/",
        f"shared:/pulp/api/v3/remotes/file/file/{remote.pk}/",
    ]
    assert shown["progress_reports"] == [
        {"message": "Downloading Artifacts", "code": "sync.downloading.artifacts", "state": "completed",
         "total": 3, "done": 3, "suffix": None},
        {"message": "Downloading Bytes", "code": "sync.downloading.bytes", "state": "completed",
         "total": 30, "done": 30, "suffix": None},
    ]
    completed.shards = [{"shard": 1, "files": 2, "files_done": 2, "bytes": 20, "bytes_done": 20},
                        {"shard": 2, "files": 1, "files_done": 0, "bytes": 10, "bytes_done": 0}]
    completed.save()
    assert call(client, "GET", f"tasks/{completed.pk}/").json()["progress_reports"][2:] == [
        {"message": "Downloading Artifacts, shard 1 of 2", "code": "sync.downloading.shard", "state": "completed",
         "total": 2, "done": 2, "suffix": None},
        {"message": "Downloading Artifacts, shard 2 of 2", "code": "sync.downloading.shard", "state": "completed",
         "total": 1, "done": 0, "suffix": None},
    ], "a split sync's shards, each its own report"
    failure = call(client, "GET", f"tasks/{failed.pk}/").json()
    assert (failure["error"], failure["worker"]) == ({"description": "could not fetch the manifest: HTTP 404"}, None)
    assert (failure["created_resources"], failure["reserved_resources_record"]) == ([], [])

    listed = call(client, "GET", "tasks/?state__in=failed,waiting").json()
    assert [task["pulp_href"] for task in listed["results"]] == [failure["pulp_href"]]
    repository_href, version_href = shown["reserved_resources_record"][0], shown["created_resources"][0]
    for parameter, href in [
        ("reserved_resources", repository_href),
        ("exclusive_resources", repository_href),
        ("created_resources", version_href),
    ]:
        found = call(client, "GET", f"tasks/?{parameter}={href}").json()["results"]
        assert [task["pulp_href"] for task in found] == [shown["pulp_href"]], parameter
    remote_href = shown["reserved_resources_record"][1].removeprefix("shared:")
    assert call(client, "GET", f"tasks/?exclusive_resources={remote_href}").json()["count"] == 0, "a remote is shared"
    assert call(client, "GET", f"tasks/?shared_resources__in={remote_href}").json()["count"] == 1


def test_cancel_a_waiting_task(client: APIClient, server: str, queue: str, redis: Redis) -> None:
    """No worker takes the queue: the task waits, is canceled at once, and its job leaves the queue."""
    task = dispatch_sync(*sync_source(server + "good/PULP_MANIFEST"), tasking="rq")
    href = f"tasks/{task.pk}/"
    refused = call(client, "PATCH", href, {"state": "running"})
    assert refused.status_code == 400
    assert refused.json() == {"state": ["The only acceptable value for 'state' is 'canceled'."]}
    assert call(client, "PATCH", href, {"state": "canceled", "force": True}).json() == {"force": ["Unexpected field"]}

    canceled = call(client, "PATCH", href, {"state": "canceled"})
    assert canceled.status_code == 200 and canceled.json()["state"] == "canceled"
    assert canceled.json()["finished_at"] and canceled.json()["error"] is None
    assert Job.fetch(task.job_id, connection=redis).get_status() == JobStatus.CANCELED
    again = call(client, "PATCH", href, {"state": "canceled"})
    assert (again.status_code, again.json()["state"]) == (200, "canceled"), "as Pulp: canceled already"
    done = Task.objects.create(name="sync", state=TaskState.COMPLETED)
    conflict = call(client, "PATCH", f"tasks/{done.pk}/", {"state": "canceled"})
    assert (conflict.status_code, conflict.json()["state"]) == (409, "completed"), "a finished task stays finished"


def test_cancel_a_running_sync_on_a_simple_worker(
    client: APIClient, slow_server: str, fast_server: str, workers: Workers
) -> None:
    """RQ cannot stop a SimpleWorker's job: the sync stops itself at its next progress write, removes
    its partial downloads, and the worker goes on to the next task."""
    repository, remote = sync_source(slow_server + "big/PULP_MANIFEST", concurrency=1)
    workers.start("simple")
    task = dispatch_sync(repository, remote, tasking="rq")
    while not task.artifacts_done:
        assert not task.is_finished and workers.processes[0].poll() is None, workers.output()
        time.sleep(0.05)
        task.refresh_from_db()

    canceling = call(client, "PATCH", f"tasks/{task.pk}/", {"state": "canceled"})
    assert (canceling.status_code, canceling.json()["state"]) == (200, "canceling")
    assert canceling.json()["progress_reports"][0]["state"] == "running", "until the worker stops it"
    task = finished(task, workers)
    assert (task.state, task.error, task.created_version) == (TaskState.CANCELED, "", None)
    assert not RepositoryVersion.objects.exists()
    assert not list(artifact_store().temp_dir.glob(f"task-{task.pk}-*")), "the partial downloads are removed"

    remote.url = fast_server + "big/PULP_MANIFEST"
    remote.save()
    again = finished(dispatch_sync(repository, remote, tasking="rq"), workers)
    assert again.state == TaskState.COMPLETED, again.error
    assert_store_is_sound()


def test_a_remote_in_pulps_shape(client: APIClient, server: str) -> None:
    body = {
        "name": "r",
        "url": server + "good/PULP_MANIFEST",
        "headers": [{"X-Trace": "abc"}, {"X-Other": "d"}],
        "password": "hunter2",
        "username": "me",
        "policy": "immediate",
        "downloader": "futures",
    }
    remote = created(client, "remotes/file/file/", body)
    assert remote["pulp_href"] == f"/pulp/api/v3/remotes/file/file/{Remote.objects.get().pk}/"
    assert (remote["headers"], remote["policy"], remote["downloader"]) == (body["headers"], "immediate", "futures")
    assert "password" not in remote and {"name": "password", "is_set": True} in remote["hidden_fields"]
    assert Remote.objects.get().headers == {"X-Trace": "abc", "X-Other": "d"}, "one dict in the model"
    assert call(client, "GET", remote["pulp_href"]).json() == remote

    cleared = call(client, "PATCH", remote["pulp_href"], {"headers": []})
    assert cleared.json()["headers"] == []
    assert remote["download_processes"] == 1, "one process unless asked"
    for given, shown, stored in [("auto", "auto", 0), (4, 4, 4), ("3", 3, 3)]:
        changed = call(client, "PATCH", remote["pulp_href"], {"download_processes": given})
        assert changed.json()["download_processes"] == shown and Remote.objects.get().download_processes == stored
    shown = (remote["download_concurrency"], remote["auto_concurrency"], remote["max_concurrency"])
    assert shown == (None, False, None)
    auto = call(client, "PATCH", remote["pulp_href"], {"auto_concurrency": True, "max_concurrency": 32}).json()
    assert (auto["auto_concurrency"], auto["max_concurrency"]) == (True, 32), "download_concurrency stays an integer"
    assert Remote.objects.get().downloader_settings().concurrency_bound == 32
    for fields, field, message in [
        ({"max_concurrency": 300}, "max_concurrency", "remote 'r': max_concurrency must be from 1 to 256"),
        ({"policy": "on_demand"}, "policy", "only immediate is supported, not on_demand: a sync downloads every file"),
        ({"pulp_labels": {"a": "b"}}, "pulp_labels", "labels are not supported by pulp-sync"),
        ({"headers": {"X-A": "b"}}, "headers", 'Expected a list of objects, as [{"X-Name": "value"}].'),
        ({"downloader": "nope"}, "downloader", "remote 'r': no downloader named 'nope'; installed: "),
        ({"download_processes": -2}, "download_processes", "download_processes must be from 1 to 256, or auto"),
        ({"download_concurrency": 0}, "download_concurrency", "remote 'r': download_concurrency must be from 1 to 256"),
        ({"total_timeout": -1}, "total_timeout", "remote 'r': total_timeout must be a positive number of seconds"),
    ]:
        refused = call(client, "PATCH", remote["pulp_href"], fields)
        assert refused.status_code == 400 and list(refused.json()) == [field], refused.json()
        assert refused.json()[field][0].startswith(message)
    assert call(client, "GET", "remotes/file/file/?name__in=x,r&fields=name,policy").json()["results"] == [
        {"name": "r", "policy": "immediate"}
    ]
    assert "headers" not in call(client, "GET", remote["pulp_href"] + "?exclude_fields=headers").json()
    assert call(client, "DELETE", remote["pulp_href"]).status_code == 204


def test_versions_summarize_what_they_add_and_remove(client: APIClient, server: str) -> None:
    repository = created(client, "repositories/file/file/", {"name": "repo"})
    for manifest in ("good", "subset"):
        remote = created(client, "remotes/file/file/", {"name": manifest, "url": f"{server}{manifest}/PULP_MANIFEST"})
        call(client, "PATCH", repository["pulp_href"], {"remote": remote["pulp_href"]})
        dispatch_sync(Repository.objects.get(), Remote.objects.get(name=manifest))

    second, first = call(client, "GET", repository["versions_href"]).json()["results"]
    assert (first["number"], second["number"]) == (1, 2)
    counts = {part: {kind: entry["count"] for kind, entry in summary.items()}
              for part, summary in second["content_summary"].items()}
    assert counts == {"added": {}, "removed": {"file.file": 8}, "present": {"file.file": 4}}
    removed = second["content_summary"]["removed"]["file.file"]["href"]
    assert removed == f"/pulp/api/v3/content/file/files/?repository_version_removed={second['pulp_href']}"
    assert call(client, "GET", removed + "&limit=100").json()["count"] == 8
    assert first["content_summary"]["added"]["file.file"]["count"] == 12
    latest = call(client, "GET", repository["pulp_href"]).json()["latest_version_href"]
    assert latest == second["pulp_href"]

    bad = call(client, "GET", "content/file/files/?repository_version=/pulp/api/v3/tasks/")
    assert (bad.status_code, bad.json()) == (
        400,
        {"repository_version": ["no repository version has the href '/pulp/api/v3/tasks/'"]},
    )
    started = call(client, "POST", repository["pulp_href"] + "sync/", {"mirror": False})
    assert started.json() == {"mirror": ["only mirror syncs are supported: a version holds exactly the manifest"]}


def test_orphan_cleanup_waits_for_no_sync(client: APIClient, server: str, queue: str) -> None:
    """Content of a deleted repository is deleted with its files; not while a sync is unfinished."""
    repository, remote = sync_source(server + "subset/PULP_MANIFEST", name="gone")
    dispatch_sync(repository, remote)
    repository.delete()
    waiting = dispatch_sync(*sync_source(server + "good/PULP_MANIFEST", name="waits"), tasking="rq")

    refused = call(client, "POST", "orphans/cleanup/", {})
    assert refused.status_code == 202
    task = call(client, "GET", refused.json()["task"]).json()
    assert (task["state"], task["name"]) == ("failed", "orphan_cleanup")
    assert task["error"] == {"description": "1 sync task(s) waiting or running: clean up orphans once they finish"}

    call(client, "PATCH", f"tasks/{waiting.pk}/", {"state": "canceled"})
    protected = call(client, "POST", "orphans/cleanup/", {"orphan_protection_time": 60})
    message = "only 0 is supported, not 60: orphans are not kept for a time"
    assert protected.json() == {"orphan_protection_time": [message]}
    started = call(client, "POST", "orphans/cleanup/", {"orphan_protection_time": 0})
    done = call(client, "GET", started.json()["task"]).json()
    assert (done["state"], done["result"]) == ("completed", {"content_removed": 4, "artifacts_removed": 4})
    assert_store_is_sound()
    unknown = call(client, "POST", "orphans/cleanup/", {"content_hrefs": ["/pulp/api/v3/content/file/files/999/"]})
    assert unknown.status_code == 400 and "content_hrefs" in unknown.json()


def test_status_in_pulps_shape(client: APIClient) -> None:
    status = call(client, "GET", "status/").json()
    assert list(status) == ["versions", "online_workers", "database_connection", "redis_connection", "storage"]
    assert [(v["component"], v["version"]) for v in status["versions"]] == list(APP_VERSIONS.items())
    assert status["database_connection"] == {"connected": True} and status["redis_connection"] == {"connected": True}
    assert set(status["storage"]) == {"total", "used", "free"}
    assert APIClient(HTTP_HOST="localhost").get(API + "status/").status_code == 401, "only for users, as all else"


def test_every_write_needs_a_user(client: APIClient) -> None:
    anyone = APIClient(HTTP_HOST="localhost")
    for method, href in [
        ("POST", "remotes/file/file/"),
        ("POST", "repositories/file/file/"),
        ("POST", "repositories/file/file/1/sync/"),
        ("PATCH", f"tasks/{uuid.uuid4()}/"),
        ("POST", "orphans/cleanup/"),
        ("GET", "tasks/"),
    ]:
        assert call(anyone, method, href, {}).status_code == 401, (method, href)
