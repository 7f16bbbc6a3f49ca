"""What every layer shares: findings, atomic writes, bounded reads, child processes, signals,
the cache store, names and redaction. Imports nothing above it."""
