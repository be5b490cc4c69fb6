"""Defaults of the service's processes that are not Django settings (those are in settings.py)."""

from __future__ import annotations

API_BIND: str = "127.0.0.1:24817"
"""Where `pulp-sync api` listens: Pulp's own port, so pulp-cli's default configuration finds it."""

API_WORKERS: int = 2
"""gunicorn worker processes of `pulp-sync api`, and as many nginx worker processes before them."""

API_THREADS: int = 32
"""Request threads per gunicorn worker. nginx reads each request whole before gunicorn sees it and takes
each answer whole, so a thread waits on the database and Redis, never on a client."""

API_TIMEOUT: int = 30
"""Seconds a request may run before gunicorn restarts its worker: the API never runs a sync itself, so
a request that takes this long is stuck. nginx waits API_TIMEOUT + API_STOP_SECONDS for an answer."""

API_STOP_SECONDS: int = 5
"""How long gunicorn's workers get to finish their requests when the API stops (gunicorn's graceful_timeout),
and nginx and gunicorn each get between SIGTERM and SIGKILL. No request waits on a client, so a few seconds."""

API_START_SECONDS: float = 60.0
"""Bound on gunicorn answering on its socket after `pulp-sync api` starts it: an interpreter and Django load
in each worker, slowly on a busy machine."""

API_POLL_SECONDS: float = 0.2
"""How often `pulp-sync api` looks whether nginx and gunicorn are still running."""

API_KEEPALIVE: int = 5
"""Seconds an idle kept-alive connection waits for its next request before nginx closes it."""

API_HEADER_TIMEOUT: float = 10
"""Seconds a client has to send a request's head, the request line and headers (PULP_SYNC_API_HEADER_TIMEOUT;
nginx's client_header_timeout). nginx counts them from the connection's accept (on a kept-alive connection,
from the end of the previous request) and does not restart them as bytes trickle in, so a client sending a
byte a second is closed at this deadline too. A head is under a kilobyte."""

API_BODY_TIMEOUT: float = 30
"""Seconds a client may pause between two reads of a request's body (PULP_SYNC_API_BODY_TIMEOUT; nginx's
client_body_timeout, which restarts at each read). A body that trickles in longer is bounded by
API_CLIENT_REQUESTS: it holds one of its address's requests in progress."""

API_SEND_TIMEOUT: float = 30
"""Seconds a client may take to accept the next part of an answer (PULP_SYNC_API_SEND_TIMEOUT; nginx's
send_timeout, between two writes): a client that reads nothing is closed after it, one that reads slowly
holds one of its address's requests in progress, never a thread."""

API_CLIENT_REQUESTS: int = 32
"""Requests in progress one client address may have at once (PULP_SYNC_API_CLIENT_REQUESTS; nginx's
limit_conn), from the end of its head to the end of its answer; more get 429. Half of the default API's
threads: one address cannot keep every thread busy, and pulp-cli or the harness never ask this many at once."""

API_CONNECTIONS: int = 8192
"""Connections one nginx worker holds at most (worker_connections): a request that reaches gunicorn uses two
(the client's and gunicorn's). Idle connections and part-sent heads are counted by no address bound (nginx
knows a request only once its head is in): each costs about a kilobyte and a slot until API_HEADER_TIMEOUT,
so one address filling API_WORKERS × API_CONNECTIONS slots must open ~1,600 connections a second, every
second; past that, a firewall's connection limit (iptables connlimit) is the tool."""

API_OPEN_FILES: int = 2 * API_CONNECTIONS + 1024
"""Open files each nginx worker may have (worker_rlimit_nofile): a socket per connection, and a temporary
file per buffered body or answer, with room for its logs."""

API_HEAD_BUFFERS: tuple[int, int] = (4, 16 * 1024)
"""Buffers for a large request head (nginx's large_client_header_buffers): a request line or header line
over 16 KiB is refused with 414 or 400, a head over 64 KiB in all with 400; pulp-cli sends under 1 KiB."""

API_BODY_BUFFER: int = 16 * 1024
"""Bytes of a request body nginx keeps in memory (client_body_buffer_size); a larger body goes to a
temporary file in the API's private folder, so bodies in progress cost disk, not memory."""

API_ANSWER_BUFFERS: tuple[int, int] = (8, 16 * 1024)
"""Memory buffers for an answer from gunicorn (proxy_buffers); a larger answer goes to a temporary file, so
gunicorn hands it over at once whoever reads it, and how slowly."""

API_LINGER: float = 2
"""Seconds nginx keeps reading (and dropping) what a client still sends after the answer that closes its
connection (lingering_time), so that the client gets the answer rather than a reset."""

API_CONTENT_LOCATION: str = "/_pulp_sync_artifacts/"
"""The nginx location, internal (a direct request to it is a 404), that sends the content app's files from the
artifact store once Django has decided the request may have them (X-Accel-Redirect)."""

API_SOCKET_PATH_BYTES: int = 100
"""The longest path the API's private unix socket may have: the kernel's limit is 108 bytes (sun_path), and
a temporary folder from a deep TMPDIR would pass it; the API then uses /tmp."""

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
