"""What the runs measured and where it is kept: one record per run (records), the results folder and its
results.json (folder), the files written after every run (outputs), and the warnings the figures are to be
read with (warning). It imports nothing from the folders above it (docs/architecture.md)."""
