"""``python -m torchlean``: the command line (:func:`torchlean.cli.main`)."""

from torchlean.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
