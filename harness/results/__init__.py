"""What the runs measured and where it is kept: one record per run (records), the results folder and its
results.json (folder), the files written after every run (outputs), where and with what the
experiment ran (provenance), and the warnings the figures are to be read with (warning)."""
