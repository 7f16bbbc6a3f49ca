"""Pure knowledge about CUDA: ELF reading, the soname table, name and label rules."""
