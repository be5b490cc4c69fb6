"""Every default of the downloaders, in one place (named after pulpcore's Remote fields)."""

from __future__ import annotations

DOWNLOAD_CONCURRENCY: int = 10
"""Downloads in flight at once; pulpcore's default for a Remote."""

MAX_DOWNLOAD_CONCURRENCY: int = 256
"""The most downloads a sync may have in flight at once: the bound of `download_concurrency`.

Each download in flight holds two file descriptors, its socket and its temp file, and a process may
open 1024 by default (the usual soft RLIMIT_NOFILE, which systemd and most shells give a service):
256 downloads hold 512, and leave the other half to what else the process holds open (its database
and Redis connections, keep-alive connections waiting in the pools, a proxy's, an event loop's, logs),
so that a sync at the bound fails on no "Too many open files". It bounds the whole sync, however many
processes share it out, so a sync split across processes holds no more. Measured throughput stops
growing far below it (docs/tuning-your-remote.md: 32 to 64 on a loopback remote); an unbounded value
made the futures engine fill its pool with a slot per download before the first one started (5.3 GB
in 13 minutes at 2,000,000,000).
"""

MAX_RETRIES: int = 3
"""Retries after the first attempt for connection errors, timeouts, 429 and 5xx."""

MISMATCH_RETRIES: int = 1
"""Retries after a digest or size mismatch: one, in case the bytes were damaged in transit."""

CONNECT_TIMEOUT: float | None = 60.0
"""Seconds to get a connection, waiting for a free one in the pool included."""

SOCK_CONNECT_TIMEOUT: float | None = 30.0
"""Seconds for the TCP (and TLS) connect of a new connection."""

SOCK_READ_TIMEOUT: float | None = 60.0
"""Seconds a read on the socket may wait for the next bytes."""

TOTAL_TIMEOUT: float | None = None
"""Seconds for one attempt as a whole, body included; None: the deadline derived from the size (below)."""

MIN_RATE: float | None = 10_000.0
"""Bytes per second below which, on average, an attempt of a known size is given up when no
`total_timeout` is set (downloaders/deadlines.py); None: no derived deadline.

10 kB/s (80 kbit/s) is far below what any mirror serves one connection, so no honest download
falls below it: pulpcore's default of 10 downloads at once stays above it on a link of 0.8 Mbit/s,
and a 4 GB image gets 4.6 days. It is a floor against a server that trickles bytes to hold a
download forever (issue 17), not a performance target; a remote on a slower link sets its
`total_timeout`, which takes precedence.
"""

DEADLINE_ALLOWANCE: float = 60.0
"""Seconds added to the time the body takes at MIN_RATE, for connecting, redirects and the wait
for the headers: as long as CONNECT_TIMEOUT and SOCK_READ_TIMEOUT each, so that a small file's
deadline is no shorter than the wait each of those timeouts allows on its own."""

MAX_SECONDS: float = 2_147_483.0
"""The longest a Remote setting may make a download wait (about 24.9 days): the bound of each timeout,
and of the gap `rate_limit` puts between two starts (so `rate_limit` is at least 1 / MAX_SECONDS);
longer waits are refused when a remote is saved. It is 2**31 - 1 milliseconds, the longest wait
poll() and epoll take (Python's `select` and `selectors` raise OverflowError past it), so a plugin
that waits with them can use any value allowed. The built-in engines take more: the futures engine
(urllib3, and Python's socket and lock timeouts, in 64-bit nanoseconds) fails past 9,223,372,036 s
with OverflowError, the asyncio engine (aiohttp) takes any finite number. For no limit, give None."""

BACKOFF_BASE: float = 0.5
"""Seconds of the first backoff; each retry doubles it (full jitter)."""

BACKOFF_MAX: float = 30.0
"""Longest backoff between two attempts, and longest Retry-After honoured."""

CHUNK_SIZE: int = 256 * 1024
"""Bytes read, hashed and written per step while streaming a body."""

HASHING_SPARE_CPUS: int = 1
"""CPUs the asyncio engine leaves to its event loop's thread (reads and disk writes) when it decides how
many hashing lanes to run: one lane per other usable CPU (downloaders/offload.py), and always at
least one, so on a 2-core machine it is one lane, as before lanes existed."""

MAX_HASHING_LANES: int = 8
"""The most hashing lanes (a thread each) the asyncio engine runs, however many CPUs it may use. sha256
runs at about 1.6 GB/s on one core with SHA extensions (docs/performance.md): 8 lanes hash several times
what one event loop's thread reads and writes, so more would only add idle threads (and split the
hashing backlog, BACKLOG_CHUNKS in total, into smaller queues)."""

QUEUE_SIZE_FACTOR: int = 2
"""Finished downloads waiting for the consumer, as a multiple of the concurrency."""

DENIED_NETWORKS: tuple[str, ...] = ("169.254.0.0/16", "fe80::/10")
"""Addresses no download connects to unless the operator allows them: IPv4 and IPv6 link-local, where
cloud metadata services (169.254.169.254) hand out credentials to whoever asks from the machine."""

MAX_REDIRECTS: int = 10
"""Redirects one request follows before it fails."""

QUOTED_CHARS: int = 120
"""The most characters of a library's error text an error of ours quotes: that text can hold what the
server sent (a status line that is not HTTP), and a sync service shows errors to its users."""

MAX_CONCURRENCY: int = 64
"""The most downloads in flight `auto_concurrency` reaches (a Remote's `max_concurrency`). On every link
measured here throughput stops growing below it (docs/tuning-your-remote.md: 10 fills loopback, 16 reaches
92% of a `wan` link and 64 reaches 95%), and it is a quarter of MAX_DOWNLOAD_CONCURRENCY, so an adaptive
sync holds at most 128 file descriptors for its downloads."""

AUTO_START: int = 8
"""Downloads in flight an adaptive fetch begins with: small, as TCP's and BBR's windows begin, below
pulpcore's default of 10, and one quadrupling from 32 (each step costs a window of the search, which a
sync of a few seconds feels)."""

AUTO_WINDOW: float = 0.2
"""Seconds an adaptive fetch measures goodput for at least before it changes its limit."""

AUTO_SETTLE: float = 0.05
"""Seconds a new limit runs at least before its window counts (and at least one chunk or end a slot)."""

AUTO_SETTLE_ROUND_TRIPS: float = 2.0
"""A new limit runs this many times the mean wait for an attempt's first byte before its window counts:
its new downloads' first bytes take that long to come, more on a new connection and with TCP's slow start."""

AUTO_EVENTS_PER_SLOT: int = 8
"""Chunks or ends a window sees at least, per slot of its limit: a download's last chunk counts whole in
the window it arrives in, so a window must hold several of each download's for its goodput to be fair
(one chunk in eight: an error of an eighth at worst, a sixteenth on average)."""

AUTO_ATTEMPTS_PER_WINDOW: float = 2.0
"""A window lasts at least this many attempts' time (their recent mean), so that each slot's gaps between
downloads, a round trip each without bytes, weigh in it as they do in the long run."""

AUTO_ATTEMPT_WEIGHT: float = 0.05
"""The weight of each attempt in the means of attempt time and of the wait for a first byte (exponentially
weighted means: the last twenty or so attempts count)."""

AUTO_WINDOW_MOST: float = 3.0
"""The longest a window waits for its attempts' time, in seconds: big files stream without gaps, and a
window of several seconds would make the search slower than the sync."""

AUTO_BUSY: float = 0.8
"""A window whose downloads in flight averaged less than this share of its limit ran short of work (the
end of the manifest, a rate limit, retries backing off): its goodput says nothing of the link."""

AUTO_GROWTH: float = 0.25
"""Goodput must grow by this share when the limit doubles for the search to double again (BBR's
"full pipe" estimator grows its rate by 25% a round or concludes the pipe is full)."""

AUTO_LINEAR: float = 0.8
"""A step whose goodput grew by at least this share of the limit's growth (0.8: 1.6 times as much for twice
the limit) paid in full: the link is far from full, and the next step quadruples the limit rather than
doubling it, one window instead of two."""

AUTO_TOLERANCE: float = 0.05
"""The limit held is the smallest whose goodput is within this share of the best measured (the sweep's
recommendation uses the same 5%: harness.defaults.SWEEP_TOLERANCE)."""

AUTO_PRECISION: float = 0.1
"""The bisection stops when the limits short of the plateau and on it are this share apart (or adjacent)."""

AUTO_PROBE_EVERY: int = 8
"""Windows at the held limit between two probes of a step above or below it."""

AUTO_PROBE_STEP: float = 0.25
"""A probe's step: this share of the held limit, at least one download."""

AUTO_PROBE_GAIN: float = 0.1
"""Goodput a probe above the held limit must gain for the search to resume upwards."""

AUTO_OVERLOAD_SHARE: float = 0.1
"""Overload (429, 503, refused or reset connections, timeouts) in more than this share of a window's ended
attempts, and at least two, cuts the limit: a fault here and there is no overload."""

AUTO_OVERLOAD_MEMORY: int = 16
"""Windows for which a limit that overloaded the remote stays a ceiling, after which it may be probed
again (a remote's load changes)."""

AUTO_OVERLOAD_MEMORY_MOST: int = 1024
"""The longest a ceiling is remembered, in windows, however often the remote was overloaded there: five
minutes and more at the shortest window."""

AUTO_TRAJECTORY: int = 200
"""Changes of limit a fetch keeps for its trajectory, about: past twice as many, every other is dropped."""
