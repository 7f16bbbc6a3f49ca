"""Reading an installed Python environment from outside: nothing in it is imported or executed."""
