"""csd: the CS-2 device daemon. One single-threaded loop owns the device model, persists what
it acknowledges in SQLite before replying, and serves requests and events over ZeroMQ."""
