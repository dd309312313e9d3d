"""The ``opsche`` command line: one entry point, subcommands per job.

Each subcommand turns user mistakes into one clear line on stderr and a non-zero exit code; a
traceback is printed only for a bug (an exception we did not anticipate). ``main`` parses and
dispatches; each ``*_cmd`` module registers one subcommand and imports what it needs only when
it runs; ``errors`` holds ``UserError``.
"""
