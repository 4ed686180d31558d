"""The built-in catalogue: importing this module registers every rule of INVARIANTS.md."""
