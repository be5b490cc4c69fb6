"""Syncs as tasks: Task rows dispatched inline or to RQ (`tasks`), Redis as the tasks see it (`queues`)
and the RQ worker (`worker`)."""
