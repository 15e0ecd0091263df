"""``python -m torchlean``: the command line (:func:`torchlean.cli.console_main`)."""

from torchlean.cli import console_main

if __name__ == "__main__":
    raise SystemExit(console_main())
