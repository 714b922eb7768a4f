"""The machine and the agent hosts: doctor, init, setup, trust and the configuration display.

These use cases set a repository or a host up, or look at them; the core kernel and the views
never import this package.
"""
