"""Syncs as tasks: Task rows dispatched inline or to RQ (`tasks`), Redis as the tasks see it (`queues`),
the RQ worker (`worker`) and processes named host:pid (`process_names`)."""
