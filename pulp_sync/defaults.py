"""Defaults of the service's processes that are not Django settings (those are in settings.py)."""

from __future__ import annotations

API_BIND: str = "127.0.0.1:24817"
"""Where `pulp-sync api` listens: Pulp's own port, so pulp-cli's default configuration finds it."""

API_WORKERS: int = 2
"""gunicorn worker processes of `pulp-sync api`."""

API_THREADS: int = 32
"""Request threads per API worker. A thread gets a connection only once its whole request has arrived
(pulp_sync.api.front), so threads wait on the database and Redis, never on a slow client."""

API_TIMEOUT: int = 30
"""Seconds a request may run before gunicorn restarts its worker: the API never runs a sync itself, so
a request that takes this long is stuck."""

API_KEEPALIVE: int = 5
"""Seconds an idle kept-alive connection waits for its next request before it is closed."""

API_HEADER_TIMEOUT: float = 10
"""Seconds a client has to send a request's head, the request line and headers (PULP_SYNC_API_HEADER_TIMEOUT):
counted from the connection's accept, or on a kept-alive connection from the first byte of the request, and
not extended by bytes that trickle in (nginx's client_header_timeout is 60 s between two reads, which a
client sending a byte a second never reaches). A head is under a kilobyte; a client too slow for this gets
408 Request Timeout."""

API_BODY_TIMEOUT: float = 30
"""Seconds a client has to send a request's body once its head is in (PULP_SYNC_API_BODY_TIMEOUT), in all:
the largest body the API takes (Django's DATA_UPLOAD_MAX_MEMORY_SIZE, 2.5 MiB) needs 85 KB/s, the JSON of
a remote a few kilobytes; as long as API_TIMEOUT, the time the request may then run."""

API_CONNECTIONS: int = 1000
"""Connections one API worker holds at most (gunicorn's worker_connections, its default): reading requests,
waiting in threads, kept alive. A stalled client holds one for at most API_HEADER_TIMEOUT + API_BODY_TIMEOUT
and no thread; past the bound, new connections wait in the listen backlog until one is let go."""

API_HEAD_BYTES: int = 64 * 1024
"""The largest request head the API reads (431 beyond): nginx reads 32 KiB by default, pulp-cli sends
under 1 KiB."""

API_BUFFERED_BYTES: int = 256 * 1024 * 1024
"""Bytes of unfinished requests one API worker holds at most; a read past it is answered 503, so clients
that send large bodies slowly cost a bounded memory, not API_CONNECTIONS times the largest body."""

API_LINGER: float = 2
"""Seconds a connection the API closes stays open for reading after the last answer (as gunicorn's
close_graceful), so that bytes the client still sends do not reset the connection and lose the answer."""

DATABASE_TRIES: int = 4
"""Times a transaction is run before a lost deadlock (or lock wait) is an error: the first and three retries.
Sorted inserts make a deadlock between concurrent syncs rare; three in a row means something else holds
the rows, and the error says so."""

REPOSITORY_WAIT: float = 6 * 3600
"""Seconds a sync waits for another sync of the same repository to finish (PULP_SYNC_REPOSITORY_WAIT):
as long as an RQ job may run (JOB_TIMEOUT), so a second sync outwaits any first one that is still
alive, and a stuck one does not hold the queue for ever."""

WORKER_TTL: float = 30
"""Seconds a worker's heartbeat lasts (PULP_SYNC_WORKER_TTL), as pulpcore's WORKER_TTL: it is renewed every
third of that, and the other workers fail the tasks of one whose heartbeat lapsed (worker._Heartbeat)."""

SECRET_KEY_FILE: str = "secret_key"
"""The file under PULP_SYNC_HOME that keeps the Django SECRET_KEY made on the first start, when
PULP_SYNC_SECRET_KEY is not set (settings._secret_key)."""

JOB_TIMEOUT: int = 6 * 3600
"""Seconds an RQ job may run: RQ's default (180 s) would stop a long sync. A SimpleWorker cannot
send heartbeats while it runs a job, so RQ counts it alive for this long (plus a minute)."""

JOB_RECORD_SECONDS: int = 24 * 3600
"""How long Redis keeps a finished job (RQ keeps a failed one a year): the Task row is the record."""

PROGRESS_SECONDS: float = 0.25
"""Shortest time between two progress writes of a running task: a few a second at most."""

TASK_POLL_SECONDS: float = 0.2
"""How often `tasks.wait_for` reads the task's row while it waits for the task to end."""

TASK_REAP_SECONDS: float = 2.0
"""How often `tasks.wait_for` checks that the task's process is still there."""

LOCK_POLL_SECONDS: tuple[float, float] = (0.05, 1.0)
"""First and longest pause between two tries for a repository's lock; each pause doubles the previous one
up to the longest."""

LOOKUP_BATCH: int = 1000
"""Manifest lines per database lookup while planning and while building the version."""

INSERT_BATCH: int = 500
"""Rows per INSERT."""

FLUSH_SECONDS: float = 1.0
"""Longest time an adopted artifact waits for its row while downloads are slow."""

AUTO_FILES_PER_PROCESS: int = 500
"""With download_processes auto, the fewest missing files worth a process of their own (shards.how_many),
unless their bytes are worth it (AUTO_BYTES_PER_PROCESS). A shard's process is forked, so it starts at
once, but it opens its own database connection, event loop and connection pool, and the shards' rows
go in smaller batches; 500 small files repay that: one process syncs 3,000-5,000 small files a second
on a 2-core machine, and many-small split in two took 2.03 s against 3.08 s (docs/performance.md)."""

AUTO_BYTES_PER_PROCESS: int = 64 * 1000 * 1000
"""With download_processes auto, the fewest missing bytes worth a process of their own, however few the
files: a big body's reads, hashing and writes hold a core too. On a 2-core machine the 100 manifest
(408 MB, 100 files) split in two took 0.484 s against 0.756 s with the pycurl plugin, which hashes on
its engine thread, and no longer with asyncio or futures (0.507 s against 0.533 s, 0.504 against
0.545: no difference detected), whose engines already hash on other threads (docs/performance.md)."""

SHARD_FILE_WEIGHT: int = 128 * 1024
"""What one file weighs when a sync's downloads are cut into shards, besides its bytes (shards.split): a
request, a hash, a rename and a row cost about as long as 128 kB take to transfer on loopback, so a shard
of many small files and one of a few big ones take about as long."""

SHARD_POLL_SECONDS: float = 0.25
"""Longest time a split sync's parent waits for its children's lines before it looks at its own progress
sink again (which is how a cancel reaches it)."""

SHARD_PROGRESS_SECONDS: float = 0.1
"""Shortest time between two progress lines of a shard's process: a few a second, not one per file."""

SHARD_STOP_SECONDS: float = 5.0
"""Seconds a stopped shard's process has to end after SIGTERM before it is killed."""

SHARD_ATTEMPTS: int = 2
"""Times a shard of a split RQ sync is taken before the sync fails: a taker that dies (its worker killed or
stopped, its host gone) has its shard put back once; a second death is likely the shard's own fault (a
body that kills the process), and the sync fails saying which worker stopped."""

PROGRESS_LINE_SECONDS: float = 10.0
"""Seconds between two progress lines of a sync whose output is not a terminal (a pipe, a CI log): often
enough that a long sync shows it is alive, rarely enough that a log stays readable."""
