"""Instance administration: instance configs, instances and instance partitions, with their rules."""
