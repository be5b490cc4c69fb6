"""Showing the results: summary.md and the terminal's tables and sentences (summary), the plots (plots),
and the results folder rendered as a whole, report.html included (render)."""
