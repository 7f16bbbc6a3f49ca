"""`sparkenv audit`: G1, G2 and G9 read from an installed environment. scan.py gathers the facts;
the g*_ modules are pure functions of them."""
