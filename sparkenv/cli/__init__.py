"""The command line: the typer app (commands.py), the lean entry (entry.py) and the one place a
command ends (process_exit.py). Light on purpose: importing it imports nothing."""
