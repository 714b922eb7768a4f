"""The machine and the agent hosts: doctor, init, setup, trust and the configuration display.

These use cases set a repository or a host up, or look at them; the core kernel and the views
never import this package.

- `doctor` (with `doctor_hosts`, its checks of the agent hosts), `init` (a starter verifier),
  `show_config` (`cortex config`), `trust` (a person approves a command), `adopt` (a moved
  repository takes its cases back), `storage` (what the store and caches hold);
- `setup`: registering with a host, through `program` (how a host starts Cortex), `plugin` (as a
  Claude Code plugin), `hooks` and `hook_files` (the hook set, in and out of a host's file),
  `formats`, `toml_edit` and `writing` (hosts' configuration files, never torn), `files` (what
  a set-up wrote), `trailer_hook` (the git commit-message hook);
- `programs` (where a configured command's program is) and `hook_log` (what failed in a hook).
"""
