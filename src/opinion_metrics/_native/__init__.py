"""The optional C helper, compiled from the C files beside this one into one extension module,
`_speedups` (module.c lists which file holds which function); preparation loads it."""
