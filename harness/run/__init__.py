"""Running an experiment: the order of runs (schedule), the loop that resets, syncs and records (runner),
one child process per run (child) and the record made of it (recording), the fixture servers the syncs
download from (fixture_site), the machine's state around the runs (machine), where and with what they
ran (provenance), progress on the terminal (progress), and what a run leaves behind (trash)."""
