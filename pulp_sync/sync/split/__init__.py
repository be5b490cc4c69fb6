"""One sync's downloads split into shards: `planning` (how many, and which files each takes), `forked`
(the shards run in processes forked on this host), `board` (an RQ task's shards on a board in Redis) and
`jobs` (the RQ job that takes them, on any worker)."""
