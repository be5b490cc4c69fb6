"""Syncs as tasks: Task rows dispatched inline or to RQ, waited for and canceled (`tasks`), how a task ends
(`ending`), its progress on its row (`task_progress`), what RQ calls when a job ends badly (`callbacks`),
the reaper of tasks whose process is gone (`reaping`), Redis as the tasks see it (`queues`) and the RQ
worker (`worker`)."""
