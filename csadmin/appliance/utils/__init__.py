"""`cerebras.appliance.utils`: the helpers ModelZoo imports (file, units, ini, debug_args, classes)."""
