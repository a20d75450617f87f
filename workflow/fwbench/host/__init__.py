"""The process and the machine it runs on: threads and pinning, the timing lock and loop, the
contention signals, and what the machine is (CPU, caches, GPU). Imports no other package."""
