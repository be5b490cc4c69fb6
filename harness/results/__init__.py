"""What the runs measured and where it is kept: one record per run (records), the results folder and its
results.json (folder), the files written after every run (outputs), and where and with what the
experiment ran (provenance)."""
