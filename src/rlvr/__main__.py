"""`python -m rlvr`: the command line."""

if __name__ == "__main__":
    from rlvr.cli import main

    main()
