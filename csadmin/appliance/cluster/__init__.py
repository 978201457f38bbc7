"""`cerebras.appliance.cluster`: the cluster management client's names ModelZoo imports."""
