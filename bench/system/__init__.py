"""The service as a system: load, hostile traffic, scale in rows, speed, memory, multi-host."""
