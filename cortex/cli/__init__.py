"""The `cortex` command line: parse strictly, call the kernel, render one envelope or rich text."""
