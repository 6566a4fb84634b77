"""``python -m app``: the ``portico`` command line (it lives in :mod:`app.cli.commands`)."""

from app.cli.commands import main

if __name__ == "__main__":
    main()
