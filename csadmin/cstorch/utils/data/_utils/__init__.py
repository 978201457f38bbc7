"""The DataLoader's private machinery: the input workers (the trainer's pool, each worker
process, their socket, workers in other Slurm tasks), the roles of processes that only run the
input function, the step schedule and batches' shapes. Nothing here is API: a script imports
cstorch.utils.data."""
