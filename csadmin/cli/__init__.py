"""The `cs` console: one command table drives parsing, help, completion, one-shot and shell use."""
