"""The service's records: where content comes from (Remote), what was synced (versions), what is stored.

    Remote ──sync──> Repository ──> RepositoryVersion ──(RepositoryContent)──> FileContent ──> Artifact
       └──── Task: one sync run (inline or on an RQ worker), its state, progress and outcome
    Distribution (base_path) ──> Publication ──> RepositoryVersion, or ──> Repository (its latest version)

An Artifact is one verified file in the store, keyed by sha256 and shared by every repository; a
FileContent is a relative path naming an artifact; a RepositoryVersion is an immutable set of
FileContents. A Publication makes a version servable (with a PULP_MANIFEST listing it), and a
Distribution serves a publication, or a repository's latest version, over HTTP under its base path. A
UserRole gives an API user a role on a remote, repository, publication or distribution (its creator is
its owner); a Task records who dispatched it. Only portable ORM features are used, so sqlite, PostgreSQL
and MariaDB all fit.
"""

from __future__ import annotations

import copy
import hashlib
import uuid
from collections.abc import Mapping
from dataclasses import fields
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.contenttypes.fields import GenericForeignKey, GenericRelation
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import models
from django.utils.deconstruct import deconstructible

import downloaders
from downloaders import DownloaderSettings, UnknownDownloader
from pulp_base.manifest import MANIFEST_NAME

__all__ = [
    "NoCredentialsInUrl",
    "UserRole",
    "Remote",
    "Repository",
    "RepositoryVersion",
    "Artifact",
    "FileContent",
    "RepositoryContent",
    "Publication",
    "Distribution",
    "TaskState",
    "Task",
]

_SETTING_NAMES = frozenset(f.name for f in fields(DownloaderSettings))
SENT_TO_ORIGIN = ("username", "password", "headers", "secret_headers")
"""What a remote's requests carry to its URL's origin, basic auth and headers (`secret_headers` names
some of the headers, and goes with them): whoever can read those requests reads these. See Remote.safe_change."""
ORIGIN_IDENTITY = ("client_cert", "client_key")
"""The client certificate a remote presents to its URL's origin. The key never leaves the service: a TLS
handshake proves it to that handshake's peer only, so no proxy or man in the middle can reuse it."""
SENT_TO_PROXY = ("proxy_username", "proxy_password")
"""What a remote's requests carry to its proxy (Proxy-Authorization)."""
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})
"""Headers (lowercase names) whose values are credentials whoever gave them: never shown, as passwords are not."""


@deconstructible
class NoCredentialsInUrl:
    """Refuses a URL with user info (`user:password@` or `user@`): a remote's URL is shown to whoever
    may read the remote, its credentials go in fields that are never shown (`fields`)."""

    def __init__(self, fields: str) -> None:
        self.fields = fields

    def __call__(self, url: str | None) -> None:
        try:
            netloc = urlsplit(url or "").netloc
        except ValueError:  # not a URL at all: the URL validator says so
            return
        if "@" in netloc:
            raise ValidationError(
                f"credentials do not go in the URL (user:password@ or user@): give them in {self.fields}",
                code="credentials_in_url",
            )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NoCredentialsInUrl) and other.fields == self.fields


class UserRole(models.Model):
    """A user's role on one remote or repository, by Pulp's names (`file.fileremote_owner`, ...).

    The creator of a remote or repository is given its owner role, as in Pulp; what each role
    allows is in pulp_sync/permissions.py. An object no one has a role on (made by the command line)
    is for admins only. Generic (content type and id), so that one table serves every kind of object.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="object_roles")
    role = models.CharField(max_length=128, help_text='Pulp\'s name of the role, e.g. "file.fileremote_owner".')
    content_type = models.ForeignKey(ContentType, on_delete=models.CASCADE, related_name="+")
    object_id = models.PositiveBigIntegerField()
    content_object = GenericForeignKey("content_type", "object_id")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["content_type", "object_id", "user", "role"], name="unique_user_role")
        ]

    def __str__(self) -> str:
        return f"{self.role} of {self.user} on {self.content_type.model} {self.object_id}"


class Remote(models.Model):
    """Where a repository is synced from, and how: the downloader and its settings.

    The settings fields are named exactly like `DownloaderSettings` (and pulpcore's Remote); a null
    field means "the downloader's default". No URL holds credentials (`NoCredentialsInUrl`); the
    certificates and key are PEM text (the API takes nothing else). A change that would expose a stored
    secret clears it (`safe_change`); readers see header values as `shown_headers` says.
    """

    name = models.CharField(max_length=255, unique=True)
    url = models.URLField(
        max_length=2048,
        validators=[
            URLValidator(schemes=["http", "https"], message="Enter an http or https URL."),
            NoCredentialsInUrl("username and password"),
        ],
        help_text="The PULP_MANIFEST URL (http or https); files are fetched relative to it.",
    )
    downloader = models.CharField(max_length=64, default="asyncio")
    download_concurrency = models.PositiveIntegerField(null=True, blank=True)
    auto_concurrency = models.BooleanField(
        default=False,
        help_text="Find the downloads in flight while syncing, up to max_concurrency (download_concurrency auto); a "
        "downloader that cannot change its limit keeps download_concurrency.",
    )
    max_concurrency = models.PositiveIntegerField(
        null=True, blank=True, help_text="The most downloads in flight auto_concurrency reaches (default 64)."
    )
    download_processes = models.PositiveSmallIntegerField(
        default=1,
        help_text="Processes one sync splits its downloads across (0: auto, the CPUs this process may use, "
        "bounded by the work); a setting of the sync, not of the downloader, which never sees it.",
    )
    connect_timeout = models.FloatField(null=True, blank=True)
    sock_connect_timeout = models.FloatField(null=True, blank=True)
    sock_read_timeout = models.FloatField(null=True, blank=True)
    total_timeout = models.FloatField(null=True, blank=True)
    max_retries = models.PositiveIntegerField(null=True, blank=True)
    rate_limit = models.FloatField(null=True, blank=True)
    headers = models.JSONField(null=True, blank=True)
    secret_headers = models.JSONField(
        null=True,
        blank=True,
        help_text="The names of the headers given by reference (the command line's --header-env): their values "
        "are never shown, as Authorization's, Proxy-Authorization's and Cookie's are not.",
    )
    username = models.TextField(null=True, blank=True)
    password = models.TextField(null=True, blank=True)
    proxy_url = models.TextField(
        null=True, blank=True, validators=[NoCredentialsInUrl("proxy_username and proxy_password")]
    )
    proxy_username = models.TextField(null=True, blank=True)
    proxy_password = models.TextField(null=True, blank=True)
    tls_validation = models.BooleanField(default=True)
    ca_cert = models.TextField(null=True, blank=True, help_text="PEM text of the CA certificates to trust.")
    client_cert = models.TextField(null=True, blank=True, help_text="PEM text of the client certificate.")
    client_key = models.TextField(null=True, blank=True, help_text="PEM text of the client certificate's key.")
    created = models.DateTimeField(auto_now_add=True)
    roles = GenericRelation(UserRole)  # deleted with the remote

    def __str__(self) -> str:
        return self.name

    def safe_change(self, change: Mapping[str, Any]) -> dict[str, Any]:
        """`change` as it is saved on this remote: with every stored secret it would expose to someone new
        cleared (`exposed_by`), unless `change` gives it again; and headers given without saying which came
        by reference (as the API gives them) with no `secret_headers`. The API and the command line apply
        it alike, so that whoever may change a remote cannot have its secrets sent where they can read them."""
        # django-stubs type pk as the id's int, but it is None until the remote is saved
        cleared = dict.fromkeys(self.exposed_by(change) if self.pk is not None else ())  # type: ignore[redundant-expr]
        if "headers" in change:
            cleared["secret_headers"] = None
        return {**cleared, **change}

    def exposed_by(self, change: Mapping[str, Any]) -> set[str]:
        """The secret fields that saving `change` would let someone new read, by which field it changes:

        - `url` to another origin (scheme, host or port): SENT_TO_ORIGIN and ORIGIN_IDENTITY, which would
          go to that host;
        - `proxy_url` set, or to another origin: SENT_TO_PROXY, which the new proxy would get, and
          SENT_TO_ORIGIN unless TLS to an authenticated origin hides them from it (`_tls_hides`). Removing
          the proxy shows them to no one new (a proxy set later clears them then);
        - `tls_validation` turned off, or another `ca_cert` while it is on (`_trust`): what travels inside
          TLS to a peer no longer authenticated as before, SENT_TO_ORIGIN over https and SENT_TO_PROXY to an
          https proxy.

        Nothing exposes ORIGIN_IDENTITY but a new origin: the key itself is never sent."""
        after = copy.copy(self)
        for name, value in change.items():
            setattr(after, name, value)
        exposed: set[str] = set()
        if downloaders.origin(after.url) != downloaders.origin(self.url):
            exposed.update(SENT_TO_ORIGIN, ORIGIN_IDENTITY)
        if _proxy_origin(after) not in (None, _proxy_origin(self)):
            exposed.update(SENT_TO_PROXY, () if _tls_hides(after) else SENT_TO_ORIGIN)
        if _trust(self) is not None and _trust(after) != _trust(self):
            exposed.update(SENT_TO_ORIGIN if _is_https(after.url) else ())
            exposed.update(SENT_TO_PROXY if _is_https(after.proxy_url) else ())
        return exposed

    def shown_headers(self, values_readable: bool) -> dict[str, str | None] | None:
        """The headers as a reader sees them: every name; the value of a secret header (SECRET_HEADERS,
        or given by reference) as None for everyone, and of the others as None unless `values_readable`
        (the remote's owners and admins). None when there are none."""
        if self.headers is None:
            return None
        by_reference = {name.lower() for name in self.secret_headers or ()}
        hidden = SECRET_HEADERS | by_reference
        return {
            name: value if values_readable and name.lower() not in hidden else None
            for name, value in self.headers.items()
        }

    def downloader_settings(self) -> DownloaderSettings:
        """The settings this remote gives its downloader, under the service's remote-address policy;
        raises ValueError on a bad value."""
        names = [f.attname for f in self._meta.concrete_fields if f.attname in _SETTING_NAMES]
        values = {n: getattr(self, n) for n in names if getattr(self, n) is not None}
        return DownloaderSettings.from_mapping({**values, "address_policy": settings.PULP_SYNC_ADDRESS_POLICY})

    def clean(self) -> None:
        """Refuse a remote that could not sync: an unknown downloader or settings it would reject."""
        try:
            self.downloader_settings()
            downloaders.load(self.downloader)
        except (ValueError, UnknownDownloader) as error:
            raise ValidationError(f"remote {self.name!r}: {error}") from error


def _proxy_origin(remote: Remote) -> tuple[str, str, int | None] | None:
    """Where the remote's proxy is (scheme, host, port), or None without one."""
    return downloaders.origin(remote.proxy_url) if remote.proxy_url else None


def _is_https(url: str | None) -> bool:
    return url is not None and downloaders.origin(url)[0] == "https"


def _trust(remote: Remote) -> tuple[str | None] | None:
    """How the remote authenticates the peers of its TLS connections: the CA certificates it trusts (None
    for the system's), or None when it does not (`tls_validation` off)."""
    return (remote.ca_cert or None,) if remote.tls_validation else None


def _tls_hides(remote: Remote) -> bool:
    """Whether the remote's requests to its origin are unreadable to its proxy: https, whose tunnel
    through the proxy ends at an origin the remote authenticates (`tls_validation` on)."""
    return _is_https(remote.url) and remote.tls_validation


class Repository(models.Model):
    """A named series of versions; the latest one is what the repository currently holds.

    `remote` is where a sync goes when it names no remote (Pulp's default remote of a repository).
    """

    name = models.CharField(max_length=255, unique=True)
    created = models.DateTimeField(auto_now_add=True)
    remote = models.ForeignKey(Remote, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    roles = GenericRelation(UserRole)  # deleted with the repository

    class Meta:
        verbose_name_plural = "repositories"

    def __str__(self) -> str:
        return self.name

    def latest_version(self) -> RepositoryVersion | None:
        """The current version, or None before the first successful sync."""
        return self.versions.order_by("-number").first()


class Artifact(models.Model):
    """One verified file in the artifact store, found there by its sha256.

    `missing` says the file is not (or not yet) in the store: a sync records an artifact as missing
    before it moves the file into place, and clears the mark after, so that a crash at any moment
    leaves no file without its row and no row claiming an absent file; `verify --repair` marks an
    artifact whose file is lost or damaged. The next sync that lists a missing artifact fetches it.
    """

    sha256 = models.CharField(max_length=64, unique=True)
    size = models.PositiveBigIntegerField()
    relative_path = models.CharField(max_length=255, help_text="Where the file is, relative to the store's root.")
    created = models.DateTimeField(auto_now_add=True)
    missing = models.BooleanField(default=False, help_text="The file is not in the store; the next sync fetches it.")

    def __str__(self) -> str:
        return self.sha256


class FileContent(models.Model):
    """A manifest line: a relative path and the artifact it names; shared by every version that has it.

    Unique by `key`, a digest of (relative_path, artifact sha256), rather than by the two columns:
    a 1024-character path is too long for a MySQL/MariaDB index, and their default collations
    compare case-insensitively, which would merge `A.iso` with `a.iso`. A hex key is short and
    compares the same on every engine.
    """

    key = models.CharField(max_length=64, unique=True)
    relative_path = models.CharField(max_length=1024)
    artifact = models.ForeignKey(Artifact, on_delete=models.PROTECT, related_name="contents")

    def __str__(self) -> str:
        return self.relative_path

    @staticmethod
    def key_for(relative_path: str, sha256: str) -> str:
        """The identity of a path naming an artifact's bytes."""
        return hashlib.sha256(f"{relative_path}\0{sha256}".encode()).hexdigest()


class RepositoryVersion(models.Model):
    """An immutable set of content, numbered from 1 within its repository."""

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    created = models.DateTimeField(auto_now_add=True)
    content = models.ManyToManyField(FileContent, through="RepositoryContent", related_name="versions")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["repository", "number"], name="unique_version_number")]

    def __str__(self) -> str:
        return f"{self.repository.name} version {self.number}"


class RepositoryContent(models.Model):
    """Membership of one content unit in one version."""

    version = models.ForeignKey(RepositoryVersion, on_delete=models.CASCADE, related_name="memberships")
    content = models.ForeignKey(FileContent, on_delete=models.PROTECT, related_name="memberships")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["version", "content"], name="unique_version_content")]


class Publication(models.Model):
    """A repository version made servable, as Pulp's file publication: its content under its relative
    paths, and a manifest (`PULP_MANIFEST` unless named otherwise) listing them, made from the version
    when asked for (a version never changes, so neither does its manifest). Deleted with its version."""

    repository_version = models.ForeignKey(RepositoryVersion, on_delete=models.CASCADE, related_name="publications")
    manifest = models.CharField(
        max_length=255, default=MANIFEST_NAME, help_text="The name the publication's manifest is served under."
    )
    created = models.DateTimeField(auto_now_add=True)
    roles = GenericRelation(UserRole)  # deleted with the publication

    def __str__(self) -> str:
        return f"publication {self.pk} of {self.repository_version}"


class Distribution(models.Model):
    """Where content is served over HTTP: `/pulp/content/<base_path>/<relative path>`, from a publication,
    or from a repository's latest version (Pulp's auto-distribution), or from nothing (404s) when
    neither is set or what it named was deleted (SET_NULL, as in Pulp). No base path lies under
    another's (the API refuses it), so a URL names one distribution."""

    name = models.CharField(max_length=255, unique=True)
    base_path = models.CharField(max_length=255, unique=True)
    publication = models.ForeignKey(
        Publication, null=True, blank=True, on_delete=models.SET_NULL, related_name="distributions"
    )
    repository = models.ForeignKey(
        Repository, null=True, blank=True, on_delete=models.SET_NULL, related_name="distributions"
    )
    created = models.DateTimeField(auto_now_add=True)
    roles = GenericRelation(UserRole)  # deleted with the distribution

    def __str__(self) -> str:
        return self.name

    def served_version(self) -> RepositoryVersion | None:
        """The version whose content it serves now: its publication's, or its repository's latest."""
        if self.publication is not None:
            return self.publication.repository_version
        return None if self.repository is None else self.repository.latest_version()


class TaskState(models.TextChoices):
    """Where a task is: waiting (queued) -> running -> completed or failed; Pulp's names.

    Canceling a waiting task makes it canceled; a running one is canceling until it stops (canceled),
    or ends completed or failed if it got there first.
    """

    WAITING = "waiting"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELING = "canceling"
    CANCELED = "canceled"


UNFINISHED_TASK_STATES = (TaskState.WAITING, TaskState.RUNNING, TaskState.CANCELING)
"""The states a task may still leave: the ones a task's end, the reaper and an orphan cleanup look at."""


class Task(models.Model):
    """One sync run, inline or as an RQ job (see pulp_sync/tasking/tasks.py): state, times, progress, outcome.

    `error` is a one-line message for people (never a secret); `report` is the SyncReport as a dict,
    also after a failed download. Progress fields are written a few times a second while it runs.
    The API's orphan cleanup, repair of a version and change of a repository's content are tasks too
    (named "orphan_cleanup", "repair", "modify"; their counts in `report`), finished in the request.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=255, help_text='What the task does, e.g. "sync".')
    state = models.CharField(max_length=16, choices=TaskState.choices, default=TaskState.WAITING, db_index=True)
    created = models.DateTimeField(auto_now_add=True)
    started = models.DateTimeField(null=True)
    finished = models.DateTimeField(null=True)
    worker = models.CharField(max_length=255, blank=True, default="", help_text="The RQ worker, or host:pid inline.")
    error = models.TextField(blank=True, default="")
    repository = models.ForeignKey(Repository, null=True, on_delete=models.SET_NULL, related_name="tasks")
    remote = models.ForeignKey(Remote, null=True, on_delete=models.SET_NULL, related_name="tasks")
    created_version = models.ForeignKey(RepositoryVersion, null=True, on_delete=models.SET_NULL, related_name="+")
    artifacts_total = models.PositiveIntegerField(default=0)
    artifacts_done = models.PositiveIntegerField(default=0)
    bytes_total = models.PositiveBigIntegerField(default=0)
    bytes_done = models.PositiveBigIntegerField(default=0)
    shards = models.JSONField(
        null=True,
        help_text="A split sync's shards, each with its files and bytes, to do and done (progress.ShardProgress).",
    )
    report = models.JSONField(null=True)
    job_id = models.CharField(max_length=64, blank=True, default="", help_text="The RQ job's id; empty inline.")
    dispatched_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The API user who started it; none from the command line.",
    )

    def __str__(self) -> str:
        return f"{self.name} task {self.pk} ({self.state})"

    @property
    def is_finished(self) -> bool:
        """Completed, failed or canceled: nothing will change it any more."""
        return self.state not in UNFINISHED_TASK_STATES
