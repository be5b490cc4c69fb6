"""Showing the results: one view of a results folder, shaped once (view, in the words of wording), and
one exporter per output rendering it: the terminal (terminal), summary.md (markdown), report.html from
templates/ (html); the plots (plots); and the folder rendered as a whole (render)."""
